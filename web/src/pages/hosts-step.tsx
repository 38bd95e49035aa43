import { useState, type FormEvent } from 'react';
import { api, errorMessage, type Host } from '../api';
import { Empty, ErrorMessage, formatBytes, formatGiB, Link, PageTitle, StatusBadge } from '../components/ui';
import { failingValidations, hostFacts, PRE_INSTALL } from '../model';
import { clusterPath } from '../router';
import { InstallStartedNote, type StepProps } from './cluster';

const ROLES = [
  { value: 'auto-assign', label: 'Auto-assign' },
  { value: 'master', label: 'Control plane' },
  { value: 'worker', label: 'Worker' },
] as const;

export function HostsStep({ cluster, reload }: StepProps) {
  const hosts = [...(cluster.hosts ?? [])].sort((a, b) => hostFacts(a).hostname.localeCompare(hostFacts(b).hostname));
  const editable = PRE_INSTALL.includes(cluster.status);
  const known = hosts.filter((h) => h.status === 'known').length;
  return (
    <div className="card">
      <PageTitle>Hosts</PageTitle>
      <InstallStartedNote cluster={cluster} />
      <p className="muted" role="status" aria-live="polite">
        {hosts.length} host{hosts.length === 1 ? '' : 's'} discovered, {known} ready. Needs {cluster.control_plane_count ?? 3} control-plane host{(cluster.control_plane_count ?? 3) === 1 ? '' : 's'}.
      </p>
      {hosts.length === 0 ? (
        <Empty title="Waiting for hosts">
          <p>
            Boot your machines from the <Link href={clusterPath(cluster.id, 'image')}>discovery image</Link>. They appear here within a minute of booting.
          </p>
        </Empty>
      ) : (
        <div className="table-wrap">
          <table className="table hosts">
            <caption className="sr-only">Discovered hosts</caption>
            <thead>
              <tr>
                <th scope="col">Hostname</th>
                <th scope="col">Role</th>
                <th scope="col">Status</th>
                <th scope="col">CPU</th>
                <th scope="col">RAM</th>
                <th scope="col">Disks</th>
                <th scope="col">Install disk</th>
              </tr>
            </thead>
            {hosts.map((h) => (
              <HostRows key={h.id} host={h} editable={editable} onChanged={reload} />
            ))}
          </table>
        </div>
      )}
      <div className="actions split">
        <Link href={clusterPath(cluster.id, 'image')} className="btn btn-ghost">
          Back: image
        </Link>
        <Link href={clusterPath(cluster.id, 'networking')} className="btn btn-primary">
          Next: networking
        </Link>
      </div>
    </div>
  );
}

function HostRows({ host, editable, onChanged }: { host: Host; editable: boolean; onChanged: () => void }) {
  const f = hostFacts(host);
  const failing = failingValidations(host);
  const [error, setError] = useState<string>();
  const patch = async (p: Parameters<typeof api.updateHost>[2]) => {
    setError(undefined);
    try {
      await api.updateHost(host.infra_env_id ?? '', host.id, p);
      onChanged();
      return true;
    } catch (err) {
      setError(errorMessage(err));
      return false;
    }
  };
  return (
    <tbody className="host" data-host-id={host.id} data-hostname={f.hostname}>
      <tr>
        <td>{editable ? <HostnameEditor hostId={host.id} current={f.hostname} onSave={(name) => patch({ host_name: name })} /> : <span className="strong">{f.hostname}</span>}</td>
        <td>
          {editable ? (
            <select aria-label={`Role of ${f.hostname}`} value={host.role ?? 'auto-assign'} onChange={(e) => void patch({ host_role: e.target.value as 'auto-assign' | 'master' | 'worker' })}>
              {ROLES.map((r) => (
                <option key={r.value} value={r.value}>
                  {r.value === 'auto-assign' && host.role === 'auto-assign' && host.suggested_role && host.suggested_role !== 'auto-assign' ? `Auto (${host.suggested_role === 'master' ? 'control plane' : host.suggested_role})` : r.label}
                </option>
              ))}
            </select>
          ) : (
            <span>{host.bootstrap ? 'bootstrap' : host.role === 'master' ? 'control plane' : host.role}</span>
          )}
        </td>
        <td>
          <StatusBadge status={host.status} />
          <div className="muted small status-info">{host.status_info}</div>
        </td>
        <td>{f.cpuCores ?? '—'} cores</td>
        <td>{formatGiB(f.ramBytes)}</td>
        <td>{formatBytes(f.diskBytes)}</td>
        <td className="mono small">{f.installDisk ?? '—'}</td>
      </tr>
      {(failing.length > 0 || error) && (
        <tr className="validations-row">
          <td colSpan={7}>
            <ErrorMessage error={error} />
            {failing.length > 0 && (
              <ul className="validations" aria-label={`Failing validations of ${f.hostname}`}>
                {failing.map((v) => (
                  <li key={v.id} className={`validation validation-${v.status === 'failure' ? (v.blocking ? 'bad' : 'warn') : 'pending'}`} data-validation={v.id}>
                    <span className="validation-id">{v.id}</span> <span>{v.message}</span>
                    {v.hint && (
                      <div className="hint">
                        <span className="hint-label">How to fix:</span> {v.hint}
                      </div>
                    )}
                  </li>
                ))}
              </ul>
            )}
          </td>
        </tr>
      )}
    </tbody>
  );
}

function HostnameEditor({ hostId, current, onSave }: { hostId: string; current: string; onSave: (name: string) => Promise<boolean> }) {
  // The draft survives the page's polling: it follows the server only while untouched.
  const [draft, setDraft] = useState<string>();
  const [saving, setSaving] = useState(false);
  const value = draft ?? current;
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setSaving(true);
    if (await onSave(value.trim())) setDraft(undefined);
    setSaving(false);
  };
  return (
    <form className="inline-form" onSubmit={submit}>
      <label className="sr-only" htmlFor={`hostname-${hostId}`}>
        Hostname of {current}
      </label>
      <input id={`hostname-${hostId}`} className="input-compact" value={value} onChange={(e) => setDraft(e.target.value)} spellCheck={false} autoComplete="off" />
      {draft !== undefined && draft !== current && (
        <button type="submit" className="btn btn-small" disabled={saving}>
          {saving ? 'Saving…' : 'Save'}
        </button>
      )}
    </form>
  );
}
