import { useEffect, useState } from 'react';
import { api, type EventRecord } from '../api';
import { useAction } from '../hooks';
import { streamClusterEvents } from '../events';
import { ErrorMessage, Link, PageTitle, ProgressBar, StatusBadge } from '../components/ui';
import { clusterPercent, hostFacts, INSTALLING } from '../model';
import { clusterPath, navigate } from '../router';
import type { StepProps } from './cluster';

const MAX_EVENTS = 300;

function useLiveEvents(clusterId: string) {
  const [events, setEvents] = useState<Array<EventRecord & { seq: number }>>([]);
  const [state, setState] = useState<'connecting' | 'live' | 'reconnecting'>('connecting');
  useEffect(() => {
    const s = streamClusterEvents(clusterId, {
      onEvent: (e, seq) => setEvents((prev) => (prev.some((p) => p.seq === seq) ? prev : [{ ...e, seq }, ...prev].slice(0, MAX_EVENTS))),
      onState: setState,
    });
    return () => s.close();
  }, [clusterId]);
  return { events, state };
}

export function ProgressStep({ cluster, infraEnv, reload }: StepProps) {
  const { events, state } = useLiveEvents(cluster.id);
  const action = useAction();
  const hosts = [...(cluster.hosts ?? [])].sort((a, b) => Number(b.bootstrap) - Number(a.bootstrap) || hostFacts(a).hostname.localeCompare(hostFacts(b).hostname));
  const running = INSTALLING.includes(cluster.status);
  // A failed host fails the cluster (error) while its install workflow waits: that is when a retry helps.
  const retryable = running || cluster.status === 'error';
  const total = clusterPercent(cluster);
  // Validation warnings from before the install are history here; this list is about the install.
  const since = cluster.install_started_at ?? '';
  const warnings = events.filter((e) => e.severity !== 'info' && e.event_time >= since).slice(0, 20);
  const timedOut = hosts.filter((h) => h.progress?.stage_timed_out);

  const act = async (name: string, fn: () => Promise<unknown>) => {
    if ((await action.run(name, fn)) !== undefined) reload();
  };

  return (
    <div className="stack">
      <div className="card">
        <div className="page-head">
          <PageTitle>Installation progress</PageTitle>
          <div className="actions">
            {running && (
              <button
                type="button"
                className="btn btn-danger"
                disabled={action.busy !== undefined}
                onClick={() => {
                  if (confirm(`Cancel the installation of ${cluster.name}? Hosts stop where they are.`)) void act('cancel', () => api.cancelCluster(cluster.id));
                }}
              >
                Cancel installation
              </button>
            )}
            {(cluster.status === 'cancelled' || cluster.status === 'error') && (
              <button
                type="button"
                className="btn"
                disabled={action.busy !== undefined}
                onClick={() =>
                  void act('reset', async () => {
                    await api.resetCluster(cluster.id);
                    navigate(clusterPath(cluster.id, 'hosts'));
                    return true;
                  })
                }
              >
                Reset cluster
              </button>
            )}
          </div>
        </div>
        <div className="cluster-progress">
          <ProgressBar value={total} label="Cluster install progress" tone={cluster.status === 'installed' ? 'good' : cluster.status === 'error' || cluster.status === 'cancelled' ? 'bad' : 'busy'} />
          <p aria-live="polite" className="cluster-status">
            <StatusBadge status={cluster.status} /> {cluster.status_info}
            {cluster.progress?.finalizing_stage && cluster.status === 'finalizing' ? ` · ${cluster.progress.finalizing_stage}` : ''}
          </p>
        </div>
        {cluster.status === 'installed' && (
          <div className="alert alert-ok" role="status">
            <strong>The cluster is installed.</strong> <Link href={clusterPath(cluster.id, 'done')}>Get the kubeconfig and the install report</Link>.
          </div>
        )}
        {timedOut.length > 0 && (
          <div className="alert alert-warn" role="status">
            Taking longer than expected: {timedOut.map((h) => `${hostFacts(h).hostname} (${h.progress?.current_stage ?? 'stage'})`).join(', ')}. The install keeps waiting.
          </div>
        )}
        <ErrorMessage error={action.error} />
        <div className="table-wrap">
          <table className="table">
            <caption className="sr-only">Hosts being installed</caption>
            <thead>
              <tr>
                <th scope="col">Host</th>
                <th scope="col">Role</th>
                <th scope="col">Stage</th>
                <th scope="col">Progress</th>
                <th scope="col">Status</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {hosts.map((h) => {
                const f = hostFacts(h);
                return (
                  <tr key={h.id} data-hostname={f.hostname}>
                    <td className="strong">{f.hostname}</td>
                    <td>{h.bootstrap ? 'bootstrap' : h.role === 'master' ? 'control plane' : h.role}</td>
                    <td>
                      {h.progress?.current_stage ?? '—'}
                      {h.progress?.stage_timed_out && <span className="badge badge-warn">slow</span>}
                    </td>
                    <td className="cell-progress">
                      <ProgressBar value={h.progress?.installation_percentage ?? 0} label={`${f.hostname} progress`} tone={h.status === 'installed' ? 'good' : h.status === 'error' ? 'bad' : 'busy'} />
                    </td>
                    <td>
                      <StatusBadge status={h.status} />
                      {h.status === 'error' && <div className="muted small status-info">{h.status_info}</div>}
                    </td>
                    <td>
                      {h.status === 'error' && retryable && infraEnv && (
                        <button type="button" className="btn btn-small" disabled={action.busy !== undefined} onClick={() => void act(`retry-${h.id}`, () => api.retryHost(h.infra_env_id ?? infraEnv.id, h.id))}>
                          Retry {f.hostname}
                        </button>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      </div>
      <div className="grid-events">
        <section className="card" aria-labelledby="events-title">
          <h2 id="events-title" className="h3">
            Events <span className={`live live-${state}`}>{state === 'live' ? 'live' : state}</span>
          </h2>
          {events.length === 0 ? (
            <p className="muted">No events yet.</p>
          ) : (
            <ol className="events" aria-live="polite" aria-relevant="additions">
              {events.map((e) => (
                <EventItem key={e.seq} event={e} />
              ))}
            </ol>
          )}
        </section>
        <section className="card" aria-labelledby="warnings-title">
          <h2 id="warnings-title" className="h3">
            Warnings
          </h2>
          {warnings.length === 0 ? (
            <p className="muted">None so far.</p>
          ) : (
            <ul className="events">
              {warnings.map((e) => (
                <EventItem key={e.seq} event={e} />
              ))}
            </ul>
          )}
        </section>
      </div>
    </div>
  );
}

/** One event line, in the live list and in the warnings alike. */
function EventItem({ event: e }: { event: EventRecord }) {
  return (
    <li className={`event event-${e.severity}`}>
      <time dateTime={e.event_time}>{new Date(e.event_time).toLocaleTimeString()}</time>
      <span className="event-msg">{e.message}</span>
    </li>
  );
}
