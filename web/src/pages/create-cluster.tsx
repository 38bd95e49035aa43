import { useState, type FormEvent } from 'react';
import { api } from '../api';
import { useAction, useApi } from '../hooks';
import { ErrorMessage, Link, PageTitle } from '../components/ui';
import { clusterPath, navigate } from '../router';

/**
 * Cluster details. Submitting registers the cluster and its infra-env (the
 * discovery image definition) together, because the pull secret is needed by
 * both and the API never hands it back: asking for it twice would be worse.
 */
export function CreateClusterPage() {
  const versions = useApi(() => api.versions(), []);
  const [name, setName] = useState('');
  const [release, setRelease] = useState('');
  const [baseDomain, setBaseDomain] = useState('');
  const [controlPlanes, setControlPlanes] = useState('3');
  const [sshKey, setSshKey] = useState('');
  const [pullSecret, setPullSecret] = useState('');
  const action = useAction();

  const releases = Object.entries(versions.data ?? {});
  const chosenRelease = release || releases.find(([, v]) => v.default)?.[0] || releases[0]?.[0] || '';
  const single = controlPlanes === '1';

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    await action.run('create', async () => {
      const cluster = await api.createCluster({
        name: name.trim(),
        openshift_version: chosenRelease,
        base_dns_domain: baseDomain.trim() || undefined,
        control_plane_count: Number(controlPlanes),
        high_availability_mode: single ? 'None' : 'Full',
        ssh_public_key: sshKey.trim() || undefined,
        pull_secret: pullSecret.trim(),
      });
      await api.createInfraEnv({
        name: `${cluster.name ?? name}-infra-env`,
        cluster_id: cluster.id,
        pull_secret: pullSecret.trim(),
        ssh_authorized_key: sshKey.trim() || undefined,
        image_type: 'full-iso',
        openshift_version: chosenRelease,
      });
      navigate(clusterPath(cluster.id, 'image'));
    });
  };

  return (
    <section className="card">
      <PageTitle>Create a cluster</PageTitle>
      <p className="muted">Step 1 of 6: cluster details. Next you download a discovery image and boot your machines from it.</p>
      <ErrorMessage error={versions.error} onRetry={versions.reload} />
      <form onSubmit={submit} noValidate={false} aria-describedby="create-help">
        <div className="grid-2">
          <div className="field">
            <label htmlFor="cluster-name">Cluster name</label>
            <input id="cluster-name" name="name" required value={name} onChange={(e) => setName(e.target.value)} autoComplete="off" aria-describedby="cluster-name-help" />
            <p id="cluster-name-help" className="help">
              Lower-case letters, digits and “-”; becomes part of the API address.
            </p>
          </div>
          <div className="field">
            <label htmlFor="release">Kubernetes release</label>
            <select id="release" name="release" required value={chosenRelease} onChange={(e) => setRelease(e.target.value)} disabled={!releases.length}>
              {!releases.length && <option value="">{versions.loading ? 'Loading releases…' : 'No releases available'}</option>}
              {releases.map(([id, v]) => (
                <option key={id} value={id}>
                  {v.display_name}
                  {v.support_level !== 'production' ? ` (${v.support_level})` : ''}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor="base-domain">Base domain</label>
            <input id="base-domain" name="base_dns_domain" required placeholder="example.com" value={baseDomain} onChange={(e) => setBaseDomain(e.target.value)} aria-describedby="base-domain-help" />
            <p id="base-domain-help" className="help">
              The API is reached at api.{name || '<name>'}.{baseDomain || '<domain>'}.
            </p>
          </div>
          <div className="field">
            <label htmlFor="control-planes">Control-plane hosts</label>
            <select id="control-planes" name="control_plane_count" value={controlPlanes} onChange={(e) => setControlPlanes(e.target.value)}>
              <option value="1">1 (single node: no high availability)</option>
              <option value="3">3 (highly available)</option>
              <option value="4">4</option>
              <option value="5">5</option>
            </select>
          </div>
        </div>
        <div className="field">
          <label htmlFor="ssh-key">SSH public key (optional)</label>
          <textarea id="ssh-key" name="ssh_public_key" rows={2} placeholder="ssh-ed25519 AAAA… you@example.com" value={sshKey} onChange={(e) => setSshKey(e.target.value)} spellCheck={false} aria-describedby="ssh-help" />
          <p id="ssh-help" className="help">
            Lets you log in to the hosts during discovery and after install.
          </p>
        </div>
        <div className="field">
          <label htmlFor="pull-secret">Pull secret</label>
          <textarea id="pull-secret" name="pull_secret" rows={3} required placeholder='{"auths":{…}}' value={pullSecret} onChange={(e) => setPullSecret(e.target.value)} spellCheck={false} aria-describedby="pull-help" />
          <p id="pull-help" className="help">
            Registry credentials as JSON. Stored by the service and never shown again.
          </p>
        </div>
        <ErrorMessage error={action.error} />
        <p id="create-help" className="sr-only">
          Creates the cluster and its discovery image definition.
        </p>
        <div className="actions">
          <Link href="/" className="btn btn-ghost">
            Cancel
          </Link>
          <button type="submit" className="btn btn-primary" disabled={action.busy !== undefined || !chosenRelease}>
            {action.busy ? 'Creating…' : 'Create cluster'}
          </button>
        </div>
      </form>
    </section>
  );
}
