/**
 * `landfall install --cluster X [--wait]`: starts the install (or follows one
 * already running) and, with --wait, shows it until the cluster is installed
 * (exit 0) or the install fails or is cancelled (exit 1).
 */
import { Command } from 'commander';
import { resolveCluster, type ApiClient, type Json } from '../api-client';
import { followEvents } from '../event-stream';
import { CliError } from '../exit-codes';
import { createInstallView } from '../install-view';
import { clientOf, duration, printJson, setTime, withClientOptions, type ClientFlags } from '../output';
import { printCluster } from './clusters';

/** Statuses of an install under way: --wait attaches instead of starting another, and waits while the cluster is in one. Leaving them for anything but installed (error, cancelled, or back to ready when preparation fails) is a failed install. */
const UNDER_WAY = ['preparing-for-installation', 'installing', 'installing-pending-user-action', 'finalizing'];
const POLL_MS = 1000;

export function installCommand(): Command {
  return withClientOptions(
    new Command('install')
      .description('start installing a ready cluster; --wait follows it (bars per host, events below) and exits 0 only once it is installed')
      .requiredOption('--cluster <cluster>', 'cluster id or name')
      .option('-w, --wait', 'follow the install until it ends'),
  ).action(async (o: ClientFlags & { cluster: string; wait?: boolean }) => {
    const api = clientOf(o);
    let c = await resolveCluster(api, o.cluster);
    const progressOut = o.output === 'json' ? process.stderr : process.stdout;
    if (c.status === 'installed') {
      if (o.output === 'json') return printJson(c);
      process.stdout.write(`cluster ${c.name} is already installed\n`);
      return;
    }
    let skip: number | undefined;
    if (UNDER_WAY.includes(c.status)) {
      if (!o.wait) throw new CliError('usage', `cluster ${c.name} is already ${c.status}; follow it with: landfall install --cluster ${c.name} --wait`);
      progressOut.write(`cluster ${c.name} is already ${c.status}; following it\n`);
    } else {
      // Events of this attempt only: the live stream starts from the cluster's first event, so the ones already there are counted and skipped.
      skip = Number((await api.json('GET', '/events', { query: { cluster_id: c.id, limit: 1 } })).headers.get('event-count') ?? 0);
      c = (await api.json('POST', `/clusters/${c.id}/actions/install`)).body;
    }
    if (!o.wait) {
      if (o.output === 'json') return printJson(c);
      printCluster(c);
      process.stdout.write(`follow it with: landfall install --cluster ${c.name} --wait\n`);
      return;
    }
    const final = await follow(api, c, progressOut, skip);
    if (o.output === 'json') printJson(final);
    const startedAt = setTime(final.install_started_at);
    const took = startedAt ? ` in ${duration((Date.parse(setTime(final.install_completed_at) ?? new Date().toISOString()) - Date.parse(startedAt)) / 1000)}` : '';
    if (final.status === 'installed') {
      progressOut.write(`cluster ${final.name} is installed${took}; kubeconfig: landfall kubeconfig --cluster ${final.name} -f kubeconfig\n`);
      return;
    }
    throw new CliError('failed', `install of ${final.name} ${final.status === 'cancelled' ? 'was cancelled' : 'failed'} (${final.status}: ${final.status_info}); see: landfall report --cluster ${final.name}`);
  });
}

/** `skip`: events of the cluster before this attempt (a new install); attaching to a running one shows the events since it started. */
async function follow(api: ApiClient, start: Json, out: NodeJS.WriteStream, skip: number | undefined): Promise<Json> {
  const startedAt = setTime(start.install_started_at);
  const view = createInstallView(out, startedAt ? Date.parse(startedAt) : Date.now());
  const abort = new AbortController();
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
    abort.abort();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // Attaching: the service's clock says which events belong to this attempt (a little slack: the database stamps events at transaction start).
  const since = skip === undefined && startedAt ? Date.parse(startedAt) - 250 : 0;
  let seen = 0;
  const events = (async () => {
    for await (const { event } of followEvents(api, start.id, abort.signal)) if (++seen > (skip ?? 0) && Date.parse(event.event_time) >= since) view.event(event);
  })();
  let eventsError: unknown;
  events.catch((err: unknown) => {
    eventsError = err;
  });
  let c = start;
  try {
    for (;;) {
      view.cluster(c);
      if (!UNDER_WAY.includes(c.status)) break;
      await new Promise((r) => setTimeout(r, POLL_MS));
      if (interrupted) throw new CliError('interrupted', `stopped following; the install goes on (landfall install --cluster ${start.name} --wait follows it again)`);
      if (eventsError) throw eventsError;
      c = await api.get(`/clusters/${c.id}`);
    }
    // Let the last events (installed, failed) reach the screen before the final frame.
    await new Promise((r) => setTimeout(r, 1200));
    return c;
  } finally {
    abort.abort();
    view.stop();
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    await events.catch(() => undefined);
  }
}
