/** `landfall events --cluster X [--follow] [--severity S]`. */
import { Command, Option } from 'commander';
import { resolveCluster, type ApiClient, type Json } from '../api-client';
import { followEvents } from '../event-stream';
import { clientOf, clock, printJson, table, withClientOptions, type ClientFlags } from '../output';
import { hostName } from './hosts';

export const SEVERITIES = ['info', 'warning', 'error', 'critical'] as const;

/** This severity and the worse ones. */
export function atLeast(severity: string | undefined): string[] {
  return severity ? SEVERITIES.slice(SEVERITIES.indexOf(severity as (typeof SEVERITIES)[number])) : [...SEVERITIES];
}

/** host id → hostname, for the HOST column (events name hosts by id). */
export function hostNames(cluster: Json): Map<string, string> {
  return new Map(((cluster.hosts ?? []) as Json[]).map((h) => [h.id as string, hostName(h)]));
}

export function eventLine(e: Json, names: Map<string, string>): string {
  const host = e.host_id ? (names.get(e.host_id) ?? String(e.host_id).slice(0, 8)) : '';
  // Most host messages already start with "Host <name>:"; name the host only when the message does not.
  const prefix = host && !String(e.message).includes(host) ? `${host}: ` : '';
  return `${clock(e.event_time)} ${e.severity.padEnd(8)} ${prefix}${e.message}`;
}

export function eventsCommand(): Command {
  return withClientOptions(
    new Command('events')
      .description("a cluster's events, oldest first; --follow keeps streaming new ones (one JSON object per line with -o json)")
      .requiredOption('--cluster <cluster>', 'cluster id or name')
      .option('-f, --follow', 'stream new events as they happen (Ctrl-C stops)')
      .addOption(new Option('--severity <level>', 'only this severity and worse').choices([...SEVERITIES]))
      .option('--limit <n>', 'only the last N events (without --follow)', (v) => Number(v)),
  ).action(async (o: ClientFlags & { cluster: string; follow?: boolean; severity?: string; limit?: number }) => {
    const api = clientOf(o);
    const cluster = await resolveCluster(api, o.cluster);
    const wanted = atLeast(o.severity);
    if (o.follow) return follow(api, cluster, wanted, o.output);
    const events = await api.get<Json[]>('/events', { cluster_id: cluster.id, severities: o.severity ? wanted.join(',') : undefined, order: 'ascending' });
    const shown = o.limit && o.limit > 0 ? events.slice(-o.limit) : events;
    if (o.output === 'json') return printJson(shown);
    const names = hostNames(cluster);
    process.stdout.write(table(['TIME', 'SEVERITY', 'HOST', 'MESSAGE'], shown.map((e) => [clock(e.event_time), e.severity, e.host_id ? (names.get(e.host_id) ?? e.host_id.slice(0, 8)) : undefined, e.message])));
  });
}

async function follow(api: ApiClient, cluster: Json, wanted: string[], output: string): Promise<void> {
  const abort = new AbortController();
  process.once('SIGINT', () => abort.abort());
  process.once('SIGTERM', () => abort.abort());
  let names = hostNames(cluster);
  for await (const { event } of followEvents(api, cluster.id, abort.signal)) {
    if (!wanted.includes(event.severity)) continue;
    if (output === 'json') {
      process.stdout.write(JSON.stringify(event) + '\n');
      continue;
    }
    // A host that registered after we started has no name yet: look it up once.
    if (event.host_id && !names.has(event.host_id)) names = hostNames(await api.get(`/clusters/${cluster.id}`).catch(() => cluster));
    process.stdout.write(eventLine(event, names) + '\n');
  }
}
