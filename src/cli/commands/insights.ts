/**
 * `landfall insights [--since 7d | --from T --to T]`: GET
 * /api/landfall/v1/insights as text: success rates, where installs failed
 * (stage, cause, release, host profile), stage durations and the validations
 * that blocked hosts.
 */
import { Command } from 'commander';
import { LANDFALL_API_PATH, type Json } from '../api-client';
import { CliError } from '../exit-codes';
import { clientOf, duration, printJson, table, withClientOptions, type ClientFlags } from '../output';

const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "90m", "24h", "7d" → milliseconds. */
export function parseSince(v: string): number {
  const m = /^(\d+)([mhd])$/.exec(v.trim());
  if (!m || Number(m[1]) <= 0) throw new CliError('usage', `--since: "${v}" is not a duration like 90m, 24h or 7d`);
  return Number(m[1]) * UNIT_MS[m[2]!]!;
}

const pct = (r: number | null | undefined) => (r === null || r === undefined ? '-' : `${(r * 100).toFixed(1)}%`);
const secs = (s: number | null | undefined) => duration(s) ?? '-';

export function insightsText(r: Json): string {
  const out: string[] = [];
  const i = r.installs;
  out.push(`insights from ${r.from} to ${r.to}`);
  out.push(`  installs started ${i.attempts_started} (${i.clusters} clusters): ${i.installed} installed, ${i.failed} failed, ${i.cancelled} cancelled, ${i.in_progress} running; ${i.host_retries} host retries`);
  out.push(`  first-attempt success ${pct(r.first_attempt.success_rate)} (${r.first_attempt.succeeded} of ${r.first_attempt.concluded}, no host retried); eventual success ${pct(r.eventual.success_rate)} (${r.eventual.succeeded} of ${r.eventual.concluded})`);
  const ready = r.registration_to_ready;
  out.push(`  first host registered to cluster ready: p50 ${secs(ready.p50_seconds)}, p95 ${secs(ready.p95_seconds)} (${ready.ready} of ${ready.clusters} clusters ready)`);
  const section = (title: string, headers: string[], rows: Array<Array<string | number | undefined>>) => {
    if (!rows.length) return;
    out.push('', title, table(headers, rows).trimEnd());
  };
  section('failures by stage', ['STAGE', 'FAILURES'], r.failures.by_stage.map((x: Json) => [x.stage, x.count]));
  section('failures by cause', ['STAGE', 'KIND', 'FAILURES', 'CLUSTERS', 'CAUSE'], r.failures.by_cause.map((x: Json) => [x.stage, x.kind, x.count, (x.clusters as Json[]).map((c) => c.name ?? c.id).join(','), x.cause]));
  section('by release', ['RELEASE', 'ATTEMPTS', 'INSTALLED', 'FAILED', 'CANCELLED', 'RUNNING', 'SUCCESS'], r.by_release.map((x: Json) => [x.release, x.attempts, x.installed, x.failed, x.cancelled, x.in_progress, pct(x.success_rate)]));
  section('by host profile', ['CPU', 'RAM', 'INSTALL DISK', 'HOSTS', 'INSTALLED', 'FAILED', 'FAILURE RATE'], r.by_host_profile.map((x: Json) => [x.cpu, x.ram, x.disk, x.hosts, x.installed, x.failed, pct(x.failure_rate)]));
  section('stage durations', ['STAGE', 'SAMPLES', 'P50', 'P95'], r.stage_durations.map((x: Json) => [x.stage, x.count, secs(x.p50_seconds), secs(x.p95_seconds)]));
  section('failing validations', ['VALIDATION', 'FAILURES', 'HOSTS', 'BLOCKED P50', 'BLOCKED P95', 'STILL FAILING'], r.validations.map((x: Json) => [x.validation_id, x.failures, x.hosts, secs(x.blocked_p50_seconds), secs(x.blocked_p95_seconds), x.unresolved]));
  return out.join('\n') + '\n';
}

export function insightsCommand(): Command {
  return withClientOptions(
    new Command('insights')
      .description('install insights over a window: success rates, failures by stage, cause, release and host profile, stage durations, blocking validations')
      .option('--since <duration>', 'the window ends now and starts this long before (90m, 24h, 7d)', '7d')
      .option('--from <time>', 'start of the window (RFC 3339); with --to, instead of --since')
      .option('--to <time>', 'end of the window (RFC 3339, exclusive)'),
  ).action(async (o: ClientFlags & { since: string; from?: string; to?: string }) => {
    const api = clientOf(o);
    const now = Date.now();
    const to = o.to ?? new Date(now).toISOString();
    const from = o.from ?? new Date((o.to ? Date.parse(o.to) : now) - parseSince(o.since)).toISOString();
    const r = await api.get(`${LANDFALL_API_PATH}/insights`, { from, to });
    if (o.output === 'json') return printJson(r);
    process.stdout.write(insightsText(r));
  });
}
