/** `landfall cluster create|update|list|show|delete`. */
import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { resolveCluster, type ApiClient, type Json } from '../api-client';
import { CliError } from '../exit-codes';
import { clientOf, clock, printFields, printJson, printTable, positiveInt, setTime, withClientOptions, type ClientFlags } from '../output';

/** The API requires a pull secret; an empty one is right when every image is public. */
const EMPTY_PULL_SECRET = '{"auths":{}}';

export function readTextFile(option: string, file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new CliError('usage', `${option}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/** The release marked default, else the newest. */
async function defaultRelease(api: ApiClient): Promise<string> {
  const versions = await api.get<Record<string, { default?: boolean }>>('/openshift-versions');
  const names = Object.keys(versions);
  if (!names.length) throw new CliError('usage', 'the service offers no release; give --openshift-version');
  return names.find((v) => versions[v]!.default) ?? names.sort((a, b) => a.localeCompare(b, undefined, { numeric: true })).at(-1)!;
}

interface CreateFlags extends ClientFlags {
  openshiftVersion?: string;
  baseDomain?: string;
  controlPlaneCount?: number;
  singleNode?: boolean;
  sshKeyFile?: string;
  pullSecretFile?: string;
  apiVip?: string;
  ingressVip?: string;
  machineNetwork?: string;
}

export function hostCounts(c: Json): string {
  const hosts = (c.hosts ?? []) as Json[];
  return hosts.length ? `${hosts.length} (${hosts.filter((h) => ['known', 'installed'].includes(h.status)).length} ready)` : '0';
}

export function printCluster(c: Json): void {
  printFields([
    ['id', c.id],
    ['name', c.name],
    ['release', c.openshift_version],
    ['status', c.status],
    ['status info', c.status_info],
    ['base domain', c.base_dns_domain],
    ['control planes', c.control_plane_count ?? (c.high_availability_mode === 'None' ? 1 : undefined)],
    ['hosts', hostCounts(c)],
    ['api vips', (c.api_vips ?? []).map((v: Json) => v.ip).join(', ')],
    ['progress', c.progress?.total_percentage !== undefined ? `${c.progress.total_percentage}%` : undefined],
    ['created', c.created_at],
    ['install started', setTime(c.install_started_at)],
    ['install completed', setTime(c.install_completed_at)],
  ]);
}

/** The settings create and update share. */
function settingsBody(o: Omit<CreateFlags, keyof ClientFlags>): Json {
  const body: Json = {};
  if (o.baseDomain) body.base_dns_domain = o.baseDomain;
  if (o.pullSecretFile) body.pull_secret = readTextFile('--pull-secret-file', o.pullSecretFile);
  if (o.sshKeyFile) body.ssh_public_key = readTextFile('--ssh-key-file', o.sshKeyFile);
  if (o.apiVip) body.api_vips = [{ ip: o.apiVip }];
  if (o.ingressVip) body.ingress_vips = [{ ip: o.ingressVip }];
  if (o.machineNetwork) body.machine_networks = [{ cidr: o.machineNetwork }];
  return body;
}

function settingsOptions(cmd: Command): Command {
  return cmd
    .option('--base-domain <domain>', 'base DNS domain (api.<name>.<domain>)')
    .option('--ssh-key-file <file>', 'public SSH key for the installed hosts')
    .option('--pull-secret-file <file>', 'registry pull secret JSON (default on create: an empty one)')
    .option('--api-vip <ip>', 'virtual IP of the Kubernetes API')
    .option('--ingress-vip <ip>', 'virtual IP of ingress')
    .option('--machine-network <cidr>', 'the hosts’ network (derived from the VIPs when they are set)');
}

export function clusterCommand(): Command {
  const cluster = new Command('cluster').description('create, update, list, show and delete clusters');

  const create = cluster
    .command('create')
    .description('create a cluster')
    .argument('<name>', 'lower-case letters, digits and hyphens')
    .option('--openshift-version <release>', 'release to install (default: the service’s default release)')
    .option('--release <release>', 'same as --openshift-version')
    .option('--control-plane-count <n>', 'number of control-plane hosts', positiveInt('--control-plane-count'))
    .option('--single-node', 'one host that is control plane and worker');
  withClientOptions(settingsOptions(create)).action(async (name: string, o: CreateFlags & { release?: string }) => {
    const api = clientOf(o);
    if (o.singleNode && o.controlPlaneCount !== undefined && o.controlPlaneCount !== 1) throw new CliError('usage', '--single-node and --control-plane-count are contradictory');
    const body: Json = {
      name,
      openshift_version: o.openshiftVersion ?? o.release ?? (await defaultRelease(api)),
      pull_secret: EMPTY_PULL_SECRET,
      ...settingsBody(o),
    };
    if (o.singleNode) Object.assign(body, { control_plane_count: 1, high_availability_mode: 'None' });
    else if (o.controlPlaneCount !== undefined) body.control_plane_count = o.controlPlaneCount;
    const created = (await api.json('POST', '/clusters', { body })).body;
    if (o.output === 'json') return printJson(created);
    printCluster(created);
  });

  withClientOptions(settingsOptions(cluster.command('update').description('change the settings of a cluster that is not installing').argument('<cluster>', 'id or name'))).action(async (ref: string, o: CreateFlags) => {
    const api = clientOf(o);
    const c = await resolveCluster(api, ref);
    const body = settingsBody(o);
    if (!Object.keys(body).length) throw new CliError('usage', 'nothing to change: give at least one option (see landfall cluster update --help)');
    const updated = (await api.json('PATCH', `/clusters/${c.id}`, { body })).body;
    if (o.output === 'json') return printJson(updated);
    printCluster(updated);
  });

  withClientOptions(cluster.command('list').alias('ls').description('list clusters')).action(async (o: ClientFlags) => {
    const list = await clientOf(o).get<Json[]>('/clusters', { with_hosts: true });
    if (o.output === 'json') return printJson(list);
    printTable(
      ['NAME', 'ID', 'RELEASE', 'STATUS', 'HOSTS', 'CREATED'],
      list.map((c) => [c.name, c.id, c.openshift_version, c.status, hostCounts(c), c.created_at ? `${c.created_at.slice(0, 10)} ${clock(c.created_at)}` : undefined]),
    );
  });

  withClientOptions(cluster.command('show').description('show one cluster').argument('<cluster>', 'id or name')).action(async (ref: string, o: ClientFlags) => {
    const c = await resolveCluster(clientOf(o), ref);
    if (o.output === 'json') return printJson(c);
    printCluster(c);
  });

  withClientOptions(cluster.command('delete').alias('rm').description('delete a cluster (and unbind its hosts)').argument('<cluster>', 'id or name')).action(async (ref: string, o: ClientFlags) => {
    const api = clientOf(o);
    const c = await resolveCluster(api, ref);
    await api.json('DELETE', `/clusters/${c.id}`);
    if (o.output === 'json') return printJson({ id: c.id, name: c.name, deleted: true });
    process.stdout.write(`deleted cluster ${c.name} (${c.id})\n`);
  });

  return cluster;
}
