/**
 * `landfall report --cluster X`: the install report (GET
 * /v2/clusters/{id}/install-report) summarised for a person: the outcome, and
 * for a failure which host, at which stage, why, and what to do.
 */
import { Command } from 'commander';
import { resolveCluster, type Json } from '../api-client';
import { clientOf, clock, duration, printJson, table, withClientOptions, type ClientFlags } from '../output';

export function reportText(r: Json, o: { timeline?: boolean } = {}): string {
  const lines: string[] = [];
  lines.push(`cluster ${r.cluster_name} (${r.cluster_id}): ${String(r.outcome).toUpperCase()}`);
  lines.push(`  status ${r.status}${r.status_info ? `: ${r.status_info}` : ''}`);
  lines.push(`  release ${r.openshift_version ?? '-'}, attempt ${r.install_attempt ?? '-'}${r.started_at ? `, started ${r.started_at}` : ''}${r.completed_at ? `, completed ${r.completed_at}` : ''}${r.duration_seconds != null ? ` (${duration(r.duration_seconds)})` : ''}`);
  const f = r.failure;
  if (f) {
    lines.push('');
    lines.push(`failure: host ${f.hostname ?? f.host_id ?? '-'}${f.role ? ` (${f.role})` : ''} at stage "${f.stage ?? '-'}"`);
    lines.push(`  cause:       ${f.cause ?? '-'}`);
    lines.push(`  remediation: ${f.remediation ?? '-'}`);
  }
  const hosts = (r.hosts ?? []) as Json[];
  if (hosts.length) {
    lines.push('');
    const rows = hosts.map((h) => {
      const stages = (h.stages ?? []) as Json[];
      const last = stages.at(-1);
      const took = stages.reduce((s: number, x: Json) => s + (typeof x.duration_seconds === 'number' ? x.duration_seconds : 0), 0);
      return [h.hostname ?? String(h.host_id).slice(0, 8), `${h.role ?? '-'}${h.bootstrap ? ' (bootstrap)' : ''}`, h.status, last?.stage, stages.length ? duration(took) : undefined, h.retries ?? 0, (h.warnings ?? []).length, h.failure ? `${h.failure.stage}: ${h.failure.cause}` : ''];
    });
    lines.push(table(['HOSTNAME', 'ROLE', 'STATUS', 'LAST STAGE', 'STAGES TOOK', 'RETRIES', 'WARNINGS', 'FAILURE'], rows).trimEnd());
    for (const h of hosts.filter((x) => x.failure)) {
      lines.push('');
      lines.push(`${h.hostname ?? h.host_id} failed at "${h.failure.stage}": ${h.failure.cause}`);
      if (h.failure.remediation) lines.push(`  fix: ${h.failure.remediation}`);
    }
  }
  const warnings = (r.warnings ?? []) as Json[];
  if (warnings.length) {
    lines.push('');
    lines.push('warnings:');
    const names = new Map(hosts.map((h) => [h.host_id, h.hostname]));
    for (const w of warnings) lines.push(`  ${clock(w.at)} ${w.host_id ? `${names.get(w.host_id) ?? w.host_id}: ` : ''}${w.message}`);
  }
  if (o.timeline && (r.timeline ?? []).length) {
    lines.push('');
    lines.push('timeline:');
    const names = new Map(hosts.map((h) => [h.host_id, h.hostname]));
    for (const e of r.timeline as Json[]) lines.push(`  ${clock(e.at)} ${String(e.severity ?? '').padEnd(8)} ${e.host_id ? `${names.get(e.host_id) ?? e.host_id}: ` : ''}${e.message}`);
  }
  return lines.join('\n') + '\n';
}

export function reportCommand(): Command {
  return withClientOptions(
    new Command('report')
      .description('the install report of a cluster: outcome, per-host stages and durations, retries, warnings, and a failure with its cause and remediation')
      .requiredOption('--cluster <cluster>', 'cluster id or name')
      .option('--timeline', 'also print every event of the install'),
  ).action(async (o: ClientFlags & { cluster: string; timeline?: boolean }) => {
    const api = clientOf(o);
    const c = await resolveCluster(api, o.cluster);
    const report = await api.get(`/clusters/${c.id}/install-report`);
    if (o.output === 'json') return printJson(report);
    process.stdout.write(reportText(report, o));
  });
}
