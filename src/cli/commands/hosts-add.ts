/**
 * `landfall hosts add --cluster X [--install [--wait]]`: day 2. Opens an
 * installed cluster for new hosts (allow-add-workers), gives the discovery
 * image of its day-2 infra-env (made once), and lists the hosts booted from
 * it with what they fail. --install installs every new host that is known,
 * each on its own; --wait follows them with one bar per host until each is
 * installed (exit 0) or one fails (exit 1, retry it with the web UI or
 * POST …/actions/retry-install).
 */
import { type ApiClient, type Json } from '../api-client';
import { CliError } from '../exit-codes';
import { createInstallView } from '../install-view';
import { clientOf, printFields, printJson, type ClientFlags } from '../output';
import { hostName, hostsTable } from './hosts';
import { readFileSync } from 'node:fs';

export interface AddFlags extends ClientFlags {
  cluster: string;
  install?: boolean;
  wait?: boolean;
  pullSecretFile?: string;
}

const NEW_HOST = 'AddToExistingClusterHost';
/** Day-2 host statuses on the way to installed; error ends the wait. */
const ON_THE_WAY = ['installing', 'installing-in-progress', 'added-to-existing-cluster', 'installing-pending-user-action'];

async function dayTwoInfraEnv(api: ApiClient, c: Json, pullSecretFile: string | undefined): Promise<Json> {
  const name = `${c.name}-day2`;
  const existing = ((await api.get<Json[]>('/infra-envs', { cluster_id: c.id })) ?? []).find((ie) => ie.name === name);
  if (existing) return existing;
  const pull = pullSecretFile ? readFileSync(pullSecretFile, 'utf8') : '{"auths":{}}';
  return (await api.json('POST', '/infra-envs', { body: { name, cluster_id: c.id, openshift_version: c.openshift_version, pull_secret: pull } })).body;
}

export async function hostsAdd(o: AddFlags, c: Json): Promise<void> {
  const api = clientOf(o);
  const say = (line: string): void => {
    (o.output === 'json' ? process.stderr : process.stdout).write(`${line}\n`);
  };
  if (c.status === 'installed') {
    c = (await api.json('POST', `/clusters/${c.id}/actions/allow-add-workers`)).body;
    say(`cluster ${c.name} is installed and now accepts new hosts (adding-hosts)`);
  } else if (c.status !== 'adding-hosts') {
    throw new CliError('usage', `cluster ${c.name} is ${c.status}: hosts can be added once it is installed (landfall install --cluster ${c.name} --wait)`);
  }
  const ie = await dayTwoInfraEnv(api, c, o.pullSecretFile);
  const hosts = (await api.get<Json[]>(`/clusters/${c.id}/hosts`)).filter((h) => h.kind === NEW_HOST);
  if (!o.install) {
    if (o.output === 'json') return printJson({ cluster: c, infra_env: ie, hosts });
    printFields([
      ['cluster', `${c.name} (${c.id}), ${c.status}`],
      ['day-2 infra-env', `${ie.name} (${ie.id})`],
    ]);
    say(`boot the new machines from its image: landfall iso download --infra-env ${ie.id}`);
    if (!hosts.length) return say('no new host has registered yet');
    process.stdout.write(hostsTable(hosts));
    const known = hosts.filter((h) => h.status === 'known').length;
    return say(known ? `${known} new host(s) ready: landfall hosts add --cluster ${c.name} --install --wait` : 'no new host is ready to install yet (known); fix what the table says');
  }
  const ready = hosts.filter((h) => h.status === 'known');
  if (!ready.length && !hosts.some((h) => ON_THE_WAY.includes(h.status))) throw new CliError('failed', `no new host of ${c.name} is ready to install (known); see: landfall hosts add --cluster ${c.name}`);
  for (const h of ready) {
    await api.json('POST', `/infra-envs/${h.infra_env_id}/hosts/${h.id}/actions/install`);
    say(`installing ${hostName(h)} into ${c.name}`);
  }
  if (!o.wait) return;
  const ids = new Set([...ready, ...hosts.filter((h) => ON_THE_WAY.includes(h.status))].map((h) => h.id as string));
  const final = await follow(api, c, ids);
  if (o.output === 'json') printJson(final);
  const followed = (final.hosts as Json[]).filter((h) => ids.has(h.id));
  const failed = followed.filter((h) => h.status === 'error');
  if (failed.length) throw new CliError('failed', `${failed.map(hostName).join(', ')} failed: ${failed.map((h) => h.status_info).join('; ')}; retry with POST /v2/infra-envs/<id>/hosts/<id>/actions/retry-install or the web UI`);
  say(`${followed.length} host(s) joined ${c.name}; it now has ${(final.hosts as Json[]).filter((h) => h.status === 'installed').length} installed hosts`);
}

/** One bar per new host (its stage), until every followed host is installed or one failed. */
async function follow(api: ApiClient, start: Json, ids: Set<string>): Promise<Json> {
  const view = createInstallView(process.stdout, Date.now());
  let c = start;
  try {
    for (;;) {
      c = await api.get(`/clusters/${c.id}`);
      const mine = (c.hosts as Json[]).filter((h) => ids.has(h.id));
      view.cluster({ ...c, hosts: mine });
      if (mine.every((h) => h.status === 'installed') || mine.some((h) => h.status === 'error')) return c;
      await new Promise((r) => setTimeout(r, 1000));
    }
  } finally {
    view.stop();
  }
}
