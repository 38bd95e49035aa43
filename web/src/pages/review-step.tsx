import { api } from '../api';
import { useAction } from '../hooks';
import { ErrorMessage, Link, PageTitle, StatusBadge } from '../components/ui';
import { failingValidations, hostFacts } from '../model';
import { clusterPath, navigate } from '../router';
import { InstallStartedNote, type StepProps } from './cluster';

export function ReviewStep({ cluster, reload }: StepProps) {
  const action = useAction();
  const hosts = cluster.hosts ?? [];
  const roleOf = (r: string | undefined) => (r === 'master' ? 'control plane' : r === 'worker' ? 'worker' : 'auto');
  const failing = failingValidations(cluster).filter((v) => v.status === 'failure' || v.status === 'pending');
  const hostProblems = hosts.filter((h) => h.status !== 'known');
  const ready = cluster.status === 'ready';

  const install = async () => {
    const started = await action.run('install', () => api.installCluster(cluster.id));
    if (started) {
      reload();
      navigate(clusterPath(cluster.id, 'progress'));
    }
  };

  const rows: Array<[string, string]> = [
    ['Name', cluster.name ?? ''],
    ['Release', cluster.openshift_version ?? ''],
    ['Base domain', cluster.base_dns_domain ?? '—'],
    ['Control-plane hosts', String(cluster.control_plane_count ?? 3)],
    ['Machine network', cluster.machine_networks?.map((n) => n.cidr).join(', ') || '—'],
    ['API virtual IP', cluster.api_vips?.map((v) => v.ip).join(', ') || '—'],
    ['Ingress virtual IP', cluster.ingress_vips?.map((v) => v.ip).join(', ') || '—'],
    ['Cluster network', cluster.cluster_networks?.map((n) => `${n.cidr} (/${n.host_prefix})`).join(', ') || '—'],
    ['Service network', cluster.service_networks?.map((n) => n.cidr).join(', ') || '—'],
    ['SSH key', cluster.ssh_public_key ? 'set' : 'not set'],
  ];

  return (
    <div className="card">
      <PageTitle>Review and install</PageTitle>
      <InstallStartedNote cluster={cluster} />
      <div className="grid-2">
        <dl className="summary">
          {rows.map(([k, v]) => (
            <div key={k}>
              <dt>{k}</dt>
              <dd>{v}</dd>
            </div>
          ))}
        </dl>
        <div>
          <h2 className="h3">Hosts ({hosts.length})</h2>
          <ul className="plain">
            {hosts.map((h) => (
              <li key={h.id}>
                {hostFacts(h).hostname} · {roleOf(h.role === 'auto-assign' ? h.suggested_role : h.role)} <StatusBadge status={h.status} />
              </li>
            ))}
          </ul>
        </div>
      </div>
      {(failing.length > 0 || hostProblems.length > 0) && (
        <div className="alert alert-warn" role="status">
          <strong>Not ready to install yet.</strong>
          <ul className="validations">
            {failing.map((v) => (
              <li key={v.id}>
                <span className="validation-id">{v.id}</span> {v.message}
                {v.hint && <div className="hint">{v.hint}</div>}
              </li>
            ))}
            {hostProblems.length > 0 && (
              <li>
                {hostProblems.length} host{hostProblems.length === 1 ? ' is' : 's are'} not ready: see <Link href={clusterPath(cluster.id, 'hosts')}>Hosts</Link>.
              </li>
            )}
          </ul>
        </div>
      )}
      <ErrorMessage error={action.error} />
      <div className="actions split">
        <Link href={clusterPath(cluster.id, 'networking')} className="btn btn-ghost">
          Back: networking
        </Link>
        <button type="button" className="btn btn-primary btn-large" onClick={() => void install()} disabled={!ready || action.busy !== undefined} aria-describedby="install-help">
          {action.busy ? 'Starting…' : 'Install cluster'}
        </button>
      </div>
      <p id="install-help" className="muted small right">
        {ready ? 'Writes the operating system to every host. This cannot be undone without a reset.' : `The cluster is ${cluster.status}: ${cluster.status_info}`}
      </p>
    </div>
  );
}
