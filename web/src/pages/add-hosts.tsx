/**
 * Day 2 on the cluster's last page: an installed cluster gets an "Add hosts"
 * button (allow-add-workers); a cluster that accepts hosts shows the
 * discovery image of its day-2 infra-env, the new hosts as they boot (with
 * what they fail), and installs each known one, retries or resets one.
 * Everything lives in the API, as on the other pages.
 */
import { useState } from 'react';
import { api, type Cluster, type Host, type InfraEnv } from '../api';
import { useAction, useApi } from '../hooks';
import { ErrorMessage, StatusBadge } from '../components/ui';
import { failingValidations, hostFacts } from '../model';

const NEW_HOST = 'AddToExistingClusterHost';

export function AddHostsButton({ cluster, reload }: { cluster: Cluster; reload: () => void }) {
  const action = useAction();
  if (cluster.status !== 'installed') return null;
  return (
    <>
      <button type="button" className="btn btn-primary" disabled={action.busy !== undefined} onClick={() => void action.run('open', () => api.allowAddWorkers(cluster.id)).then((c) => c && reload())}>
        {action.busy ? 'Opening…' : 'Add hosts'}
      </button>
      <ErrorMessage error={action.error} />
    </>
  );
}

/** The day-2 infra-env of the cluster: the one named <cluster>-day2, made on first use with an empty pull secret. */
async function dayTwoInfraEnv(c: Cluster): Promise<InfraEnv> {
  const name = `${c.name ?? 'cluster'}-day2`;
  const found = (await api.infraEnvsOf(c.id)).find((ie) => ie.name === name);
  return found ?? api.createInfraEnv({ name, cluster_id: c.id, openshift_version: c.openshift_version, pull_secret: '{"auths":{}}' });
}

export function AddHostsPanel({ cluster, reload }: { cluster: Cluster; reload: () => void }) {
  const action = useAction();
  const [url, setUrl] = useState<string>();
  const infraEnv = useApi(() => dayTwoInfraEnv(cluster), [cluster.id]);
  const hosts = (cluster.hosts ?? []).filter((h) => h.kind === NEW_HOST);
  const installed = (cluster.hosts ?? []).filter((h) => h.status === 'installed').length;
  const act = (name: string, fn: () => Promise<unknown>) => void action.run(name, fn).then(reload);
  const ready = hosts.filter((h) => h.status === 'known');

  return (
    <section className="card" aria-labelledby="add-hosts-title">
      <h2 id="add-hosts-title" className="h3">
        Add hosts
      </h2>
      <p className="muted">
        The cluster runs {installed} installed host{installed === 1 ? '' : 's'} and accepts new ones. Boot machines from the discovery image below; each is checked against the running cluster (its machine network, reaching its nodes, its release) and joins it as a worker when you install it.
      </p>
      <ErrorMessage error={infraEnv.error} onRetry={infraEnv.reload} />
      {infraEnv.data && (
        <div className="actions left">
          <button type="button" className="btn" disabled={action.busy !== undefined} onClick={() => void action.run('url', async () => setUrl((await api.imageUrl(infraEnv.data!.id)).url))}>
            Get the discovery image URL
          </button>
          {ready.length > 0 && (
            <button type="button" className="btn btn-primary" disabled={action.busy !== undefined} onClick={() => act('install-all', () => Promise.all(ready.map((h) => api.installHost(h.infra_env_id!, h.id))))}>
              Install {ready.length} ready host{ready.length === 1 ? '' : 's'}
            </button>
          )}
        </div>
      )}
      {url && (
        <p className="small">
          Discovery image: <code className="wrap">{url}</code>
        </p>
      )}
      <ErrorMessage error={action.error} />
      {hosts.length === 0 ? (
        <p className="muted">No new host has registered yet.</p>
      ) : (
        <div className="table-wrap">
          <table className="table">
            <caption className="sr-only">New hosts</caption>
            <thead>
              <tr>
                <th scope="col">Host</th>
                <th scope="col">Status</th>
                <th scope="col">Stage</th>
                <th scope="col">What to fix</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {hosts.map((h) => (
                <NewHostRow key={h.id} host={h} busy={action.busy !== undefined} act={act} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function NewHostRow({ host: h, busy, act }: { host: Host; busy: boolean; act: (name: string, fn: () => Promise<unknown>) => void }) {
  const name = hostFacts(h).hostname;
  const failing = failingValidations(h).filter((v) => v.status === 'failure');
  return (
    <tr>
      <td className="strong">{name}</td>
      <td>
        <StatusBadge status={h.status} />
        {h.status === 'error' && <div className="small muted">{h.status_info}</div>}
      </td>
      <td>{h.progress?.current_stage ?? '—'}</td>
      <td className="small">
        {failing.length === 0
          ? '—'
          : failing.map((v) => (
              <div key={v.id}>
                <strong>{v.id}</strong>: {v.message}
                {v.hint && <div className="hint">{v.hint}</div>}
              </div>
            ))}
      </td>
      <td>
        {h.status === 'known' && (
          <button type="button" className="btn btn-small" disabled={busy} onClick={() => act(`install-${h.id}`, () => api.installHost(h.infra_env_id!, h.id))} aria-label={`Install ${name}`}>
            Install
          </button>
        )}
        {h.status === 'error' && (
          <button type="button" className="btn btn-small" disabled={busy} onClick={() => act(`retry-${h.id}`, () => api.retryHost(h.infra_env_id!, h.id))} aria-label={`Retry ${name}`}>
            Retry
          </button>
        )}
        {['error', 'installing', 'installing-in-progress', 'added-to-existing-cluster'].includes(h.status) && (
          <button type="button" className="btn btn-small" disabled={busy} onClick={() => act(`reset-${h.id}`, () => api.resetHost(h.infra_env_id!, h.id))} aria-label={`Reset ${name}`}>
            Reset
          </button>
        )}
      </td>
    </tr>
  );
}
