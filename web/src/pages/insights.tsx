/**
 * Install insights over a window (GET /api/landfall/v1/insights): success
 * rates, where installs fail (stage, cause, release, host profile), stage
 * durations, time to ready and the validations that block hosts. The window
 * lives in the URL (?range=7d, or ?from=…&to=… for an exact one), so a link
 * shows the same numbers to whoever opens it.
 */
import { useState } from 'react';
import { api, type Insights } from '../api';
import { useApi } from '../hooks';
import { Empty, ErrorMessage, Link, Loading, PageTitle } from '../components/ui';
import { clusterPath } from '../router';

const RANGES = { '24h': 24, '7d': 24 * 7, '30d': 24 * 30, '90d': 24 * 90 } as const;
type Range = keyof typeof RANGES;
const RANGE_LABEL: Record<Range, string> = { '24h': 'Last 24 hours', '7d': 'Last 7 days', '30d': 'Last 30 days', '90d': 'Last 90 days' };

interface Window {
  range: Range | 'custom';
  from?: string;
  to?: string;
}

function windowFromUrl(): Window {
  const q = new URLSearchParams(location.search);
  const from = q.get('from');
  const to = q.get('to');
  if (from && to) return { range: 'custom', from, to };
  const range = q.get('range');
  return { range: range && range in RANGES ? (range as Range) : '7d' };
}

/** The window's bounds now: a preset ends now, a custom one is what the URL says. */
function bounds(w: Window): { from: string; to: string } {
  if (w.range === 'custom') return { from: w.from!, to: w.to! };
  const to = new Date();
  return { from: new Date(to.getTime() - RANGES[w.range] * 3600 * 1000).toISOString(), to: to.toISOString() };
}

export function percent(rate: number | null | undefined): string {
  return rate === null || rate === undefined ? '—' : `${(Math.round(rate * 1000) / 10).toFixed(1)}%`;
}

export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '—';
  if (seconds < 60) return `${Math.round(seconds * 10) / 10} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.round((seconds % 3600) / 60)} min`;
}

function Kpi({ label, value, detail, tone, testId }: { label: string; value: string; detail?: string; tone?: 'good' | 'warn' | 'bad'; testId: string }) {
  return (
    <div className={`card kpi${tone ? ` kpi-${tone}` : ''}`} data-testid={testId}>
      <div className="kpi-label">{label}</div>
      <div className="kpi-value">{value}</div>
      {detail && <div className="muted small">{detail}</div>}
    </div>
  );
}

const rateTone = (r: number | null) => (r === null ? undefined : r >= 0.75 ? 'good' : r >= 0.5 ? 'warn' : 'bad');

/** A count as a bar against the largest in its table. */
function Meter({ value, max, label }: { value: number; max: number; label: string }) {
  const w = max > 0 ? Math.round((value / max) * 100) : 0;
  return (
    <div className="meter" role="img" aria-label={`${label}: ${value}`}>
      <div className="meter-fill" style={{ width: `${w}%` }} />
    </div>
  );
}

function Section({ title, children, empty, testId }: { title: string; children: React.ReactNode; empty: boolean; testId: string }) {
  return (
    <section className="card insights-section" data-testid={testId}>
      <h2 className="h3">{title}</h2>
      {empty ? <p className="muted">Nothing in this window.</p> : <div className="table-wrap">{children}</div>}
    </section>
  );
}

function Report({ r }: { r: Insights }) {
  const maxStage = Math.max(0, ...r.failures.by_stage.map((s) => s.count));
  const maxValidation = Math.max(0, ...r.validations.map((v) => v.failures));
  return (
    <>
      <div className="kpis">
        <Kpi testId="kpi-installs" label="Installs started" value={String(r.installs.attempts_started)} detail={`${r.installs.clusters} clusters · ${r.installs.installed} installed · ${r.installs.failed} failed · ${r.installs.cancelled} cancelled · ${r.installs.in_progress} running`} />
        <Kpi testId="kpi-first-attempt" label="First-attempt success" value={percent(r.first_attempt.success_rate)} tone={rateTone(r.first_attempt.success_rate)} detail={`${r.first_attempt.succeeded} of ${r.first_attempt.concluded} clusters, no host retried`} />
        <Kpi testId="kpi-eventual" label="Eventual success" value={percent(r.eventual.success_rate)} tone={rateTone(r.eventual.success_rate)} detail={`${r.eventual.succeeded} of ${r.eventual.concluded} clusters installed in the end`} />
        <Kpi testId="kpi-failures" label="Failures" value={String(r.failures.total)} tone={r.failures.total ? 'bad' : undefined} detail={`${r.installs.host_retries} host retries`} />
        <Kpi testId="kpi-ready" label="First host → ready (p50)" value={duration(r.registration_to_ready.p50_seconds)} detail={`p95 ${duration(r.registration_to_ready.p95_seconds)} · ${r.registration_to_ready.ready} of ${r.registration_to_ready.clusters} clusters ready`} />
      </div>

      <div className="grid-2 insights-grid">
        <Section title="Failures by stage" empty={!r.failures.by_stage.length} testId="failures-by-stage">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Stage</th>
                <th scope="col">Failures</th>
                <th scope="col" className="col-meter">
                  <span className="sr-only">Share</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {r.failures.by_stage.map((s) => (
                <tr key={s.stage}>
                  <td>{s.stage}</td>
                  <td className="num">{s.count}</td>
                  <td className="col-meter">
                    <Meter value={s.count} max={maxStage} label={s.stage} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </Section>
        <Section title="By release" empty={!r.by_release.length} testId="by-release">
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Release</th>
                <th scope="col">Attempts</th>
                <th scope="col">Installed</th>
                <th scope="col">Failed</th>
                <th scope="col">Success</th>
              </tr>
            </thead>
            <tbody>
              {r.by_release.map((x) => (
                <tr key={x.release}>
                  <td>{x.release}</td>
                  <td className="num">{x.attempts}</td>
                  <td className="num">{x.installed}</td>
                  <td className="num">{x.failed}</td>
                  <td className="num">{percent(x.success_rate)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Section>
      </div>

      <Section title="Failures by cause" empty={!r.failures.by_cause.length} testId="failures-by-cause">
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Stage</th>
              <th scope="col">Kind</th>
              <th scope="col">Cause</th>
              <th scope="col">Failures</th>
              <th scope="col">Clusters</th>
            </tr>
          </thead>
          <tbody>
            {r.failures.by_cause.map((c) => (
              <tr key={`${c.stage}/${c.kind}/${c.cause}`}>
                <td>{c.stage}</td>
                <td>
                  <span className={`badge badge-${c.kind === 'timeout' ? 'warn' : 'bad'}`}>{c.kind}</span>
                </td>
                <td className="cause">{c.cause}</td>
                <td className="num">{c.count}</td>
                <td className="cause-clusters">
                  {c.clusters.map((k) => (
                    <Link key={k.id} href={clusterPath(k.id)}>
                      {k.name ?? k.id.slice(0, 8)}
                    </Link>
                  ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Section>

      <Section title="By host profile" empty={!r.by_host_profile.length} testId="by-host-profile">
        <table className="table">
          <thead>
            <tr>
              <th scope="col">CPU</th>
              <th scope="col">RAM</th>
              <th scope="col">Install disk</th>
              <th scope="col">Hosts</th>
              <th scope="col">Installed</th>
              <th scope="col">Failed</th>
              <th scope="col">Failure rate</th>
            </tr>
          </thead>
          <tbody>
            {r.by_host_profile.map((p) => (
              <tr key={p.profile}>
                <td>{p.cpu}</td>
                <td>{p.ram}</td>
                <td>{p.disk}</td>
                <td className="num">{p.hosts}</td>
                <td className="num">{p.installed}</td>
                <td className="num">{p.failed}</td>
                <td className="num">{percent(p.failure_rate)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Section>

      <Section title="Stage durations" empty={!r.stage_durations.length} testId="stage-durations">
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Stage</th>
              <th scope="col">Samples</th>
              <th scope="col">p50</th>
              <th scope="col">p95</th>
            </tr>
          </thead>
          <tbody>
            {r.stage_durations.map((s) => (
              <tr key={s.stage}>
                <td>{s.stage}</td>
                <td className="num">{s.count}</td>
                <td className="num">{duration(s.p50_seconds)}</td>
                <td className="num">{duration(s.p95_seconds)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Section>
      <Section title="Failing validations" empty={!r.validations.length} testId="validations">
        <table className="table">
          <thead>
            <tr>
              <th scope="col">Validation</th>
              <th scope="col">Failures</th>
              <th scope="col">Hosts</th>
              <th scope="col">Blocked p50</th>
              <th scope="col">Blocked p95</th>
              <th scope="col">Still failing</th>
            </tr>
          </thead>
          <tbody>
            {r.validations.map((v) => (
              <tr key={v.validation_id}>
                <td>
                  <code>{v.validation_id}</code>
                  <Meter value={v.failures} max={maxValidation} label={v.validation_id} />
                </td>
                <td className="num">{v.failures}</td>
                <td className="num">{v.hosts}</td>
                <td className="num">{duration(v.blocked_p50_seconds)}</td>
                <td className="num">{duration(v.blocked_p95_seconds)}</td>
                <td className="num">{v.unresolved}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Section>
    </>
  );
}

export function InsightsPage() {
  const [w, setW] = useState<Window>(windowFromUrl);
  const insights = useApi(
    () => {
      const b = bounds(w);
      return api.insights(b.from, b.to);
    },
    [w.range, w.from, w.to],
    w.range === 'custom' ? undefined : 30000,
  );
  const choose = (range: Range) => {
    history.replaceState(null, '', `/insights?range=${range}`);
    setW({ range });
  };
  const r = insights.data;

  return (
    <section>
      <div className="page-head">
        <PageTitle>Install insights</PageTitle>
        <div className="inline-form">
          <label htmlFor="insights-range" className="muted small">
            Window
          </label>
          <select id="insights-range" value={w.range} onChange={(e) => choose(e.target.value as Range)}>
            {(Object.keys(RANGES) as Range[]).map((k) => (
              <option key={k} value={k}>
                {RANGE_LABEL[k]}
              </option>
            ))}
            {w.range === 'custom' && <option value="custom">Custom</option>}
          </select>
        </div>
      </div>
      {r && (
        <p className="muted small" data-testid="insights-window">
          From {new Date(r.from).toLocaleString()} to {new Date(r.to).toLocaleString()}. Computed from the stored events; a failure is attributed to the first host that failed.
        </p>
      )}
      <ErrorMessage error={insights.error} onRetry={insights.reload} />
      {insights.loading && !r && <Loading what="insights" />}
      {r && r.installs.attempts_started === 0 && r.validations.length === 0 && r.registration_to_ready.clusters === 0 ? (
        <Empty title="No installs in this window">
          <p>Install a cluster, or pick a longer window.</p>
        </Empty>
      ) : (
        r && <Report r={r} />
      )}
    </section>
  );
}
