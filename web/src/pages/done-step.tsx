import { useState } from 'react';
import { api, ApiError } from '../api';
import { useAction, useApi } from '../hooks';
import { ErrorMessage, Loading, PageTitle } from '../components/ui';
import type { StepProps } from './cluster';
import { AddHostsButton, AddHostsPanel } from './add-hosts';

/** The fields of GET /v2/clusters/{id}/install-report this page shows. */
interface InstallReport {
  outcome: string;
  duration_seconds?: number | null;
  started_at?: string | null;
  completed_at?: string | null;
  failure?: { stage: string; cause: string; remediation: string; hostname?: string | null } | null;
  hosts: Array<{ host_id: string; hostname: string; role: string; bootstrap: boolean; status: string; retries: number; stages: Array<{ stage: string; duration_seconds: number; result?: string }>; warnings: Array<{ message?: string }> }>;
  warnings: Array<{ at?: string; message?: string }>;
}

/** Saves a response body as a file: the download needs the Authorization header, so a plain link cannot do it. */
async function saveResponse(res: Response, fileName: string): Promise<void> {
  const blob = await res.blob();
  const href = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = href;
  a.download = fileName;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(href), 10000);
}

const seconds = (s: number | null | undefined) => (s === null || s === undefined ? '—' : s < 90 ? `${Math.round(s)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`);

export function DoneStep({ cluster, reload }: StepProps) {
  const action = useAction();
  const [saved, setSaved] = useState<string>();
  // The report is a newer endpoint: a 404 means "not available here", not an error to show.
  const report = useApi(
    () =>
      api.installReport(cluster.id).then(
        (r) => r as InstallReport,
        (err: unknown) => {
          if (err instanceof ApiError && err.status === 404) return null;
          throw err;
        },
      ),
    [cluster.id, cluster.status],
  );

  const download = (file: 'kubeconfig' | 'kubeconfig-noingress' | 'kubeadmin-password') =>
    action.run(file, async () => {
      const res = await api.downloadCredential(cluster.id, file);
      const name = `${cluster.name ?? 'cluster'}-${file}`;
      await saveResponse(res, name);
      setSaved(name);
    });

  return (
    <div className="stack">
      <div className="card">
        <PageTitle>{cluster.status === 'installed' || cluster.status === 'adding-hosts' ? 'Your cluster is ready' : 'Credentials and report'}</PageTitle>
        <p className="muted">
          {cluster.status === 'installed' || cluster.status === 'adding-hosts'
            ? `Installed ${cluster.install_completed_at ? new Date(cluster.install_completed_at).toLocaleString() : ''}. Keep the kubeconfig safe: it is an administrator credential.`
            : `The cluster is ${cluster.status}; the kubeconfig is available once the install reaches finalizing.`}
        </p>
        <div className="actions left">
          <button type="button" className="btn btn-primary" onClick={() => void download('kubeconfig')} disabled={action.busy !== undefined}>
            {action.busy === 'kubeconfig' ? 'Preparing…' : 'Download kubeconfig'}
          </button>
          <button type="button" className="btn" onClick={() => void download('kubeconfig-noingress')} disabled={action.busy !== undefined}>
            Download kubeconfig (no ingress)
          </button>
          <AddHostsButton cluster={cluster} reload={reload} />
        </div>
        {saved && (
          <p className="muted small" role="status">
            Saved {saved}. Use it with <code>kubectl --kubeconfig {saved} get nodes</code>.
          </p>
        )}
        <ErrorMessage error={action.error} />
      </div>
      {cluster.status === 'adding-hosts' && <AddHostsPanel cluster={cluster} reload={reload} />}
      <section className="card" aria-labelledby="report-title">
        <h2 id="report-title" className="h3">
          Install report
        </h2>
        {report.loading && <Loading what="the install report" />}
        <ErrorMessage error={report.error} onRetry={report.reload} />
        {report.data === null && <p className="muted">This service has no install report for the cluster.</p>}
        {report.data && <Report report={report.data} />}
      </section>
    </div>
  );
}

function Report({ report }: { report: InstallReport }) {
  return (
    <div className="stack">
      <p>
        Outcome <strong>{report.outcome}</strong> in {seconds(report.duration_seconds)}
        {report.warnings.length ? `, ${report.warnings.length} warning${report.warnings.length === 1 ? '' : 's'}` : ''}.
      </p>
      {report.failure && (
        <div className="alert alert-error">
          <strong>
            {report.failure.hostname ? `${report.failure.hostname}: ` : ''}
            {report.failure.stage}
          </strong>{' '}
          {report.failure.cause}
          <div className="hint">{report.failure.remediation}</div>
        </div>
      )}
      <div className="table-wrap">
        <table className="table">
          <caption className="sr-only">Hosts in the install report</caption>
          <thead>
            <tr>
              <th scope="col">Host</th>
              <th scope="col">Role</th>
              <th scope="col">Status</th>
              <th scope="col">Stages</th>
              <th scope="col">Retries</th>
            </tr>
          </thead>
          <tbody>
            {report.hosts.map((h) => (
              <tr key={h.host_id}>
                <td className="strong">{h.hostname}</td>
                <td>{h.bootstrap ? 'bootstrap' : h.role === 'master' ? 'control plane' : h.role}</td>
                <td>{h.status}</td>
                <td className="small">
                  {h.stages.map((s, i) => (
                    <span key={i} className={`stage-chip stage-${s.result ?? 'completed'}`} title={`${s.stage}: ${seconds(s.duration_seconds)}`}>
                      {s.stage} {seconds(s.duration_seconds)}
                    </span>
                  ))}
                </td>
                <td>{h.retries}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {report.warnings.length > 0 && (
        <ul className="events">
          {report.warnings.map((w, i) => (
            <li key={i} className="event event-warning">
              <span className="event-msg">{w.message}</span>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
