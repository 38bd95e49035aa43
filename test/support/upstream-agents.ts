/**
 * A small lab of real discovery hosts for the upstream assisted-installer
 * agent (built by scripts/install-assisted-agent.sh): each host is a network
 * namespace on a shared bridge with a real address, in a PID namespace of its
 * own whose PID 1 is host-init.sh, so the agent's `nsenter --target 1` lands in
 * that host. A "switch" namespace on the bridge serves what a data centre
 * would: NTP (chronyd), DNS (dnsmasq), and the road to Landfall's API (a byte
 * pipe to the recording proxy of agent-api-proxy.ts on a Unix socket).
 *
 * Nothing is added to the root namespace's network. What is touched outside
 * the test's temporary folder, and undone by destroy(): one loop device per
 * host, /etc/netns/<ns>/resolv.conf, the namespaces, an empty /host folder when
 * the machine has none (the agent's inventory reads its hardware through a
 * chroot at /host, mounted per tool run; see podman-shim.sh), and the
 * /root/mtab-<host id> copies the agent's inventory step leaves.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, openSync, closeSync, rmSync, rmdirSync, symlinkSync, writeFileSync, readdirSync, readFileSync, copyFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { createTopology, netnsAvailable, type NetnsTopology } from '../../agent/netns';
import { processAlive, toolsDir } from '../../src/dev/process-utils';
import { startAgentApiProxy, type AgentApiProxy } from './agent-api-proxy';
import { tempDir } from './services';

const run = promisify(execFile);
const SCRIPTS = path.resolve(__dirname, 'upstream-agent');
/** The names the agent binary answers to (src/agent/main/main.go of the agent). */
const AGENT_TOOLS = ['agent', 'next_step_runner', 'inventory', 'free_addresses', 'disk_speed_check', 'logs_sender'];
/** What a discovery host has on PATH that the agent's steps run. */
const HOST_COMMANDS = ['unshare', 'nsenter', 'mount', 'losetup', 'chronyd', 'chronyc', 'dnsmasq', 'nmap', 'fio', 'ping', 'timeout', 'tar', 'ip'];
/** The agent image name the agent reports and passes to podman; the shim does not read it. */
export const AGENT_IMAGE = 'localhost/landfall-test/assisted-installer-agent:upstream';

export function upstreamAgentBinary(): string {
  return path.join(toolsDir(), 'bin', 'assisted-agent');
}

/**
 * Whether the lab can run here. `skip` is set when it cannot by the nature of
 * the machine (not root, no network namespaces, the agent's source not to be
 * had); a missing tool that setup installs is an error, not a skip.
 */
/**
 * Why the upstream agent cannot be run here, decided before any test is
 * defined so the test is reported as skipped (never as a pass): not root, or
 * the agent could not be had from the Go module proxy (install-assisted-agent.sh
 * writes the proxy's answer into .tools/bin/.assisted-agent-unavailable).
 */
export function upstreamAgentUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'the lab needs root (network, PID and mount namespaces)';
  if (existsSync(upstreamAgentBinary())) return undefined;
  const note = path.join(toolsDir(), 'bin', '.assisted-agent-unavailable');
  return existsSync(note) ? `the upstream agent could not be built: ${readFileSync(note, 'utf8').trim()}` : undefined;
}

export async function upstreamAgentPrerequisites(): Promise<{ skip?: string }> {
  const netns = await netnsAvailable();
  if (!netns.ok) return { skip: netns.reason };
  if (!existsSync(upstreamAgentBinary())) {
    const note = path.join(toolsDir(), 'bin', '.assisted-agent-unavailable');
    if (existsSync(note)) return { skip: `the upstream agent could not be built: ${readFileSync(note, 'utf8').trim()}` };
    throw new Error(`${upstreamAgentBinary()} is missing: run "bash scripts/setup.sh --test" (or scripts/install-assisted-agent.sh)`);
  }
  const missing: string[] = [];
  for (const cmd of HOST_COMMANDS) {
    await run('sh', ['-c', `command -v ${cmd}`]).catch(() => missing.push(cmd));
  }
  if (missing.length) throw new Error(`missing on this machine: ${missing.join(', ')}; run "bash scripts/setup.sh --test"`);
  return {};
}

export interface LabOptions {
  count: number;
  /** First three octets of the lab's /24. */
  subnet: string;
  apiUrl: string;
  infraEnvId: string;
  /** Names dnsmasq answers for: api / api-int → apiVip, *.apps → ingressVip, under <clusterName>.<baseDomain>. */
  clusterName: string;
  baseDomain: string;
  apiVip: string;
  ingressVip: string;
  maxPollSeconds?: number;
}

export interface LabHost {
  index: number;
  ns: string;
  ip: string;
  hostname: string;
  dir: string;
  state: string;
  loopDevice: string;
  process: ChildProcess;
}

export interface AgentLab {
  switchIp: string;
  cidr: string;
  hosts: LabHost[];
  proxy: AgentApiProxy;
  /** A host's logs (agent, step runner, tools, chronyd, the podman shim), for failure messages. */
  logs(index: number, tailBytes?: number): string;
  /** How each installer was started on a host (image, then its arguments), one entry a start. */
  installerRuns(index: number): string[][];
  /** What fio wrote to on a host: the path the agent named and the device numbers (hex major:minor) behind it. */
  fioTargets(index: number): Array<{ path: string; device: string }>;
  /** The hex major:minor of a host's scratch loop device. */
  scratchDevice(index: number): Promise<string>;
  /** Containers the agent stopped on a host (podman stop/rm of a running one). */
  stopped(index: number): string[];
  destroy(): Promise<void>;
}

const FORWARDER = `
const net = require('node:net');
const [sock, host, port] = process.argv.slice(1);
net.createServer((c) => {
  const u = net.connect(sock);
  c.pipe(u); u.pipe(c);
  c.on('error', () => u.destroy()); u.on('error', () => c.destroy());
}).listen(Number(port), host);
`;

export async function startAgentLab(opts: LabOptions): Promise<AgentLab> {
  await sweepStaleLabs();
  const root = tempDir(`agent-lab-${process.pid}`);
  const cleanups: Array<() => Promise<void> | void> = [];
  const children: ChildProcess[] = [];
  const destroy = async () => {
    for (const c of children) c.kill('SIGKILL');
    await Promise.all(children.map((c) => (c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((r) => c.once('exit', r)))));
    for (const f of cleanups.reverse()) await Promise.resolve(f()).catch(() => undefined);
    cleanups.length = 0;
  };
  try {
    const topology: NetnsTopology = await createTopology(opts.count, { prefix: `lfa${process.pid}`, subnet: opts.subnet });
    cleanups.push(() => topology.destroy());
    const switchIp = `${opts.subnet}.1`;
    const sw = topology.switchNs;
    await run('ip', ['-n', sw, 'addr', 'add', `${switchIp}/24`, 'dev', 'br0']);

    // The switch's services, each a child of this process.
    const swLog = openSync(path.join(root, 'switch.log'), 'a');
    cleanups.push(() => closeSync(swLog));
    const inSwitch = (args: string[]) => {
      const c = spawn('setpriv', ['--pdeathsig', 'KILL', 'ip', 'netns', 'exec', sw, ...args], { stdio: ['ignore', swLog, swLog] });
      children.push(c);
      return c;
    };
    writeFileSync(path.join(root, 'chrony-switch.conf'), [`local stratum 8`, `allow ${opts.subnet}.0/24`, `bindaddress ${switchIp}`, `cmdport 0`, `bindcmdaddress ${path.join(root, 'chrony-switch.sock')}`, `pidfile ${path.join(root, 'chrony-switch.pid')}`, ''].join('\n'));
    inSwitch(['chronyd', '-x', '-u', 'root', '-d', '-f', path.join(root, 'chrony-switch.conf')]);
    const cluster = `${opts.clusterName}.${opts.baseDomain}`;
    inSwitch([
      'dnsmasq', '-k', '--conf-file=/dev/null', '--no-resolv', '--no-hosts', '--user=root', '--pid-file=',
      `--listen-address=${switchIp}`, '--bind-interfaces', '--log-queries', '--log-facility=-',
      // Names under the base domain that are not listed are answered NXDOMAIN (the wildcard probe must not resolve).
      `--local=/${opts.baseDomain}/`,
      `--address=/api.${cluster}/${opts.apiVip}`, `--address=/api-int.${cluster}/${opts.apiVip}`, `--address=/apps.${cluster}/${opts.ingressVip}`,
    ]);
    const proxy = await startAgentApiProxy({ socketPath: path.join(root, 'api.sock'), target: opts.apiUrl, maxPollSeconds: opts.maxPollSeconds });
    cleanups.push(() => proxy.close());
    const apiPort = 8090;
    inSwitch([process.execPath, '-e', FORWARDER, proxy.socketPath, switchIp, String(apiPort)]);

    // The inventory's ghw chroot is mounted at /host per tool run; the folder has to exist.
    if (!existsSync('/host')) {
      mkdirSync('/host');
      cleanups.push(() => rmdirSync('/host'));
    }

    // One set of argv[0] names for the multi-call binary, shared by all hosts.
    const agentBin = path.join(root, 'agent-bin');
    mkdirSync(agentBin);
    for (const t of AGENT_TOOLS) symlinkSync(upstreamAgentBinary(), path.join(agentBin, t));
    const realFio = (await run('sh', ['-c', 'command -v fio'])).stdout.trim();

    const hosts: LabHost[] = [];
    for (const h of topology.hosts) {
      const index = hosts.length;
      const dir = path.join(root, `host${index}`);
      const state = path.join(dir, 'state');
      for (const d of ['bin', 'log', 'state']) mkdirSync(path.join(dir, d), { recursive: true });
      copyFileSync(path.join(SCRIPTS, 'podman-shim.sh'), path.join(dir, 'bin', 'podman'));
      copyFileSync(path.join(SCRIPTS, 'fio-guard.sh'), path.join(dir, 'bin', 'fio'));
      await run('chmod', ['+x', path.join(dir, 'bin', 'podman'), path.join(dir, 'bin', 'fio')]);
      await run('ip', ['-n', h.ns, 'route', 'add', 'default', 'via', switchIp]);
      // `ip netns exec` puts /etc/netns/<ns>/resolv.conf over /etc/resolv.conf for the host.
      mkdirSync(`/etc/netns/${h.ns}`, { recursive: true });
      writeFileSync(`/etc/netns/${h.ns}/resolv.conf`, `nameserver ${switchIp}\n`);
      cleanups.push(() => rmSync(`/etc/netns/${h.ns}`, { recursive: true, force: true }));
      writeFileSync(path.join(dir, 'chrony.conf'), [`server ${switchIp} iburst minpoll 0 maxpoll 2`, `cmdport 0`, `pidfile /run/chrony/chronyd.pid`, ''].join('\n'));
      // A sparse scratch file behind a loop device: the host's install disk for writes (host-init.sh).
      const image = path.join(dir, 'scratch.img');
      await run('truncate', ['-s', '1G', image]);
      const loopDevice = (await run('losetup', ['--find', '--show', image])).stdout.trim();
      // The image holds what fio wrote (tens of MB); the logs beside it stay for reading a failure.
      cleanups.push(() => run('losetup', ['-d', loopDevice]).then(() => rmSync(image, { force: true })));

      const hostname = `lab-host-${index}`;
      const out = openSync(path.join(dir, 'log', 'host-init.log'), 'a');
      cleanups.push(() => closeSync(out));
      // PDEATHSIG: should this test process die without its afterAll, unshare dies with it, and
      // --kill-child then ends the host's PID namespace (every process of the host).
      const proc = spawn(
        'setpriv',
        [
          '--pdeathsig', 'KILL',
          'ip', 'netns', 'exec', h.ns,
          'unshare', '--pid', '--fork', '--kill-child', '--mount-proc', '--uts',
          path.join(SCRIPTS, 'host-init.sh'),
          '--url', `http://${switchIp}:${apiPort}`,
          '--infra-env-id', opts.infraEnvId,
          '--agent-version', AGENT_IMAGE,
          '--insecure=true',
          '--interval', '5',
          '--with-journal-logging=false',
          '--with-text-logging=true',
        ],
        {
          stdio: ['ignore', out, out],
          env: {
            PATH: process.env.PATH,
            HOME: '/root',
            PULL_SECRET_TOKEN: 'landfall-lab-token',
            LANDFALL_HOST_DIR: dir,
            LANDFALL_HOSTNAME: hostname,
            LANDFALL_SCRATCH_DEV: loopDevice,
            LANDFALL_SCRATCH_DIR: root,
            LANDFALL_BOARD_SERIAL: `LANDFALL-LAB-${process.pid}-${index}`,
            LANDFALL_AGENT_BIN: agentBin,
            LANDFALL_SHIM_STATE: state,
            LANDFALL_REAL_FIO: realFio,
          },
        },
      );
      children.push(proc);
      hosts.push({ index, ns: h.ns, ip: h.ip, hostname, dir, state, loopDevice, process: proc });
    }

    // The inventory step copies /etc/mtab to /root/mtab-<host id>; remove the copies of our hosts.
    cleanups.push(() => {
      for (const id of registeredHostIds(proxy)) rmSync(`/root/mtab-${id}`, { force: true });
    });

    return {
      switchIp,
      cidr: topology.cidr,
      hosts,
      proxy,
      logs: (index, tailBytes = 6000) => hostLogs(hosts[index]!.dir, tailBytes),
      installerRuns: (index) =>
        readdirSync(hosts[index]!.state)
          .filter((f) => f.startsWith('installer-'))
          .sort()
          .map((f) => readFileSync(path.join(hosts[index]!.state, f), 'utf8').split('\n').filter(Boolean)),
      fioTargets: (index) => {
        const f = path.join(hosts[index]!.state, 'fio-targets');
        if (!existsSync(f)) return [];
        return readFileSync(f, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => ({ path: line.split(' ')[0]!, device: line.split(' ')[1] ?? '' }));
      },
      scratchDevice: async (index) => (await run('stat', ['-L', '-c', '%t:%T', hosts[index]!.loopDevice])).stdout.trim(),
      stopped: (index) => {
        const f = path.join(hosts[index]!.state, 'stopped');
        return existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter(Boolean) : [];
      },
      destroy,
    };
  } catch (err) {
    await destroy();
    throw err;
  }
}

/**
 * What a lab whose test process was killed (no afterAll) left behind: its
 * namespaces (`lfa<pid>-…`) and loop devices (backed by files in
 * landfall-agent-lab-<pid>-…). Its processes died with it (PDEATHSIG).
 */
async function sweepStaleLabs(): Promise<void> {
  const alive = processAlive;
  const { stdout: list } = await run('ip', ['netns', 'list']);
  for (const m of list.matchAll(/^lfa(\d+)-\S+/gm)) {
    if (alive(Number(m[1]))) continue;
    await run('ip', ['netns', 'del', m[0]]).catch(() => undefined);
    rmSync(`/etc/netns/${m[0]}`, { recursive: true, force: true });
  }
  const { stdout: loops } = await run('losetup', ['--list', '--noheadings', '--output', 'NAME,BACK-FILE']);
  for (const m of loops.matchAll(/^(\S+)\s+\S*landfall-agent-lab-(\d+)-\S+$/gm)) {
    if (!alive(Number(m[2]))) await run('losetup', ['-d', m[1]!]).catch(() => undefined);
  }
}

function registeredHostIds(proxy: AgentApiProxy): string[] {
  const ids = new Set<string>();
  for (const x of proxy.exchanges) {
    if (x.method !== 'POST' || !/\/infra-envs\/[^/]+\/hosts$/.test(x.url.split('?')[0]!)) continue;
    try {
      const id = (JSON.parse(x.requestBody) as { host_id?: string }).host_id;
      if (id && /^[0-9a-f-]{36}$/.test(id)) ids.add(id);
    } catch {
      /* not JSON */
    }
  }
  return [...ids];
}

function hostLogs(dir: string, tailBytes: number): string {
  const logDir = path.join(dir, 'log');
  const files = [...readdirSync(logDir).filter((f) => f.endsWith('.log')).map((f) => path.join(logDir, f)), path.join(dir, 'state', 'podman-shim.log')];
  return files
    .filter((f) => existsSync(f))
    .map((f) => {
      const text = readFileSync(f, 'utf8');
      return `--- ${path.basename(f)}\n${text.slice(-tailBytes)}`;
    })
    .join('\n');
}
