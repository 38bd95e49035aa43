/**
 * The VM lab: real virtual machines (QEMU, TCG) booted from a discovery ISO,
 * each with a blank qcow2 install disk (with a serial) and two NICs:
 *
 * - a virtio NIC on a Linux bridge (br0) in a network namespace the lab
 *   creates: one tap device per VM in that namespace, QEMU itself started in
 *   it with `ip netns exec`. The VMs reach one another there, and nothing
 *   else: the namespace has no route out;
 * - QEMU user-mode networking with restrict=on and one guestfwd: the guest
 *   reaches only the API, at http://10.0.2.100:<apiPort> (GUEST_API_HOST),
 *   through a command QEMU runs per connection that pipes to a Unix socket
 *   this process serves and forwards to 127.0.0.1:<apiPort> (a Unix socket,
 *   because QEMU and its commands live in the namespace, whose loopback is
 *   not this machine's). Each VM gets its own 10.0.2.(20+i) lease and its
 *   name as DHCP hostname there.
 *
 * Every VM has an HMP monitor on a Unix socket (`vm.hmp('boot_set c')`,
 * `system_reset`, `quit` …), its qcow2 disk path, and its serial console in a
 * file. The lab is usable beyond the tests in test/vm (a BMC emulator can
 * drive `vm.hmp`, or `restart` a VM with another ISO or boot order).
 * `destroy()` kills every QEMU it started (by pid) and deletes the namespace;
 * a lab left behind by a killed test process is swept by the next one.
 */
import { execFile, execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { processAlive } from '../../src/dev/process-utils';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const STATE = path.join(os.tmpdir(), 'landfall-vm-lab');

export const GUEST_API_HOST = '10.0.2.100';

export interface VmSpec {
  name: string;
  cpus?: number;
  memMiB?: number;
  diskGiB?: number;
  diskSerial?: string;
  /** The ISO in the VM's CD-ROM drive (stays attached, as on a real host). */
  iso?: string;
  /** QEMU's -boot order: 'cd' tries the disk first, then the CD (a datacenter host's usual order); 'dc' the CD first. */
  bootOrder?: string;
  /** A qcow2 install disk to use (created with diskGiB when missing); by default <lab dir>/<name>.qcow2. */
  disk?: string;
  /**
   * 'bios' (SeaBIOS, i440fx; the boot order is -boot order=, which HMP `boot_set` changes for the next
   * reset) or 'uefi' (OVMF, q35; the boot order becomes the devices' bootindex, fixed until a restart).
   */
  firmware?: 'bios' | 'uefi';
}

export interface Vm {
  readonly spec: Required<Omit<VmSpec, 'iso' | 'disk'>> & Pick<VmSpec, 'iso' | 'disk'>;
  readonly index: number;
  readonly disk: string;
  readonly serialLog: string;
  readonly monitorSocket: string;
  readonly bridgeMac: string;
  readonly userMac: string;
  /** This VM's address on the bridge (the lab hands it out; the guest configures it, e.g. from static_network_config). */
  readonly bridgeIp: string;
  /** The SMBIOS system UUID: stable across reboots (the agent's host id), as on real hardware. */
  readonly uuid: string;
  /** The lease QEMU's user-mode DHCP gives this VM. */
  readonly userIp: string;
  readonly startedAt: number;
  pid(): number | undefined;
  running(): boolean;
  serial(): string;
  /** Sends one HMP command and returns its output. */
  hmp(command: string): Promise<string>;
  /** QEMU's peak resident memory (VmHWM) so far, MiB. */
  peakRssMiB(): number;
  /** Kills QEMU (SIGKILL) and waits for it. The disk stays. */
  kill(): Promise<void>;
}

export interface VmLab {
  readonly ns: string;
  readonly dir: string;
  /** The bridge's subnet, e.g. 192.168.150.0/24; the bridge itself is .1, VM i is .(10+i). */
  readonly cidr: string;
  readonly guestApiUrl: string;
  readonly vms: Vm[];
  /** Creates the VM's disk (if it has none yet) and starts it. */
  start(spec: VmSpec): Promise<Vm>;
  /** Kills a VM and starts it again with the same disk and NICs, optionally another ISO or boot order. */
  restart(vm: Vm, change?: Pick<VmSpec, 'iso' | 'bootOrder'>): Promise<Vm>;
  destroy(): Promise<void>;
}

export const OVMF = '/usr/share/ovmf/OVMF.fd';

/** Whether this machine can run the lab: QEMU, root, network namespaces and tap devices, and OVMF for UEFI VMs (synchronous, for jest's skip at load). */
export function vmLabAvailable(opts: { uefi?: boolean } = {}): { ok: boolean; reason?: string } {
  if (opts.uefi && !existsSync(OVMF)) return { ok: false, reason: `${OVMF} is missing (Debian ovmf; scripts/install-system-tools.sh installs it as root)` };
  if (spawnSync('qemu-system-x86_64', ['--version'], { stdio: 'ignore' }).status !== 0) return { ok: false, reason: 'qemu-system-x86_64 is missing (Debian qemu-system-x86; scripts/install-system-tools.sh installs it as root)' };
  if (spawnSync('qemu-img', ['--version'], { stdio: 'ignore' }).status !== 0) return { ok: false, reason: 'qemu-img is missing (Debian qemu-utils)' };
  if (process.getuid?.() !== 0) return { ok: false, reason: 'the VM lab creates a network namespace and tap devices: it needs root' };
  if (!existsSync('/dev/net/tun')) return { ok: false, reason: '/dev/net/tun is missing: no tap devices here' };
  const probe = `lflabprobe${process.pid}`;
  try {
    const add = spawnSync('ip', ['netns', 'add', probe], { encoding: 'utf8' });
    if (add.status !== 0) return { ok: false, reason: `cannot create a network namespace here: ${add.stderr.trim()}` };
    const tap = spawnSync('ip', ['-n', probe, 'tuntap', 'add', 'dev', 'tap0', 'mode', 'tap'], { encoding: 'utf8' });
    if (tap.status !== 0) return { ok: false, reason: `cannot create a tap device in a network namespace here: ${tap.stderr.trim()}` };
  } finally {
    spawnSync('ip', ['netns', 'del', probe], { stdio: 'ignore' });
  }
  return { ok: true };
}

/**
 * Builds the agent bundle from this tree and the discovery OS around it (the
 * same commands set-up runs; cached, it takes a second). Returns the build's directory.
 */
export function buildDiscoveryOs(): string {
  // Built aside and renamed into place only when it changed: two test files may build at once,
  // and the image build hashes this file.
  const agent = path.join(ROOT, 'dist/agent/landfall-agent.js');
  const fresh = `${agent}.${process.pid}.tmp`;
  execFileSync(path.join(ROOT, 'node_modules/.bin/esbuild'), ['agent/main.ts', '--bundle', '--platform=node', '--target=node20', '--log-level=warning', `--outfile=${fresh}`], { cwd: ROOT, stdio: 'pipe' });
  if (existsSync(agent) && readFileSync(agent).equals(readFileSync(fresh))) rmSync(fresh);
  else renameSync(fresh, agent);
  const built = spawnSync('bash', ['scripts/build-discovery-os.sh'], { cwd: ROOT, encoding: 'utf8', timeout: 20 * 60_000 });
  if (built.status !== 0) throw new Error(`scripts/build-discovery-os.sh failed (${built.status}):\n${built.stderr.slice(-3000)}`);
  return built.stdout.trim().split('\n').pop()!;
}

const alive = processAlive;

/** Labs whose test process is gone: their QEMUs (by the pids they recorded) are killed and their namespaces deleted. */
export async function sweepStaleLabs(): Promise<string[]> {
  const swept: string[] = [];
  if (!existsSync(STATE)) return swept;
  for (const ns of readdirSync(STATE)) {
    const owner = Number(/^lflab-(\d+)-/.exec(ns)?.[1]);
    if (!owner || alive(owner)) continue;
    const dir = path.join(STATE, ns);
    for (const f of readdirSync(dir).filter((x) => x.endsWith('.pid'))) {
      const pid = Number(readFileSync(path.join(dir, f), 'utf8').trim());
      // Only a QEMU this lab started: its command line names this lab's directory.
      try {
        if (pid && alive(pid) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir)) process.kill(pid, 'SIGKILL');
      } catch {
        /* gone meanwhile */
      }
    }
    await run('ip', ['netns', 'del', ns]).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    swept.push(ns);
  }
  return swept;
}

let labCount = 0;

export async function createVmLab(opts: { apiPort: number; subnet?: string; artifactsDir?: string }): Promise<VmLab> {
  await sweepStaleLabs();
  const ns = `lflab-${process.pid}-${labCount++}`;
  const dir = path.join(STATE, ns);
  mkdirSync(dir, { recursive: true });
  const subnet = opts.subnet ?? '192.168.150';
  const artifacts = opts.artifactsDir ?? dir;
  mkdirSync(artifacts, { recursive: true });
  await run('ip', ['netns', 'add', ns]);
  const ipn = (...a: string[]) => run('ip', ['-n', ns, ...a]);
  await ipn('link', 'set', 'lo', 'up');
  await ipn('link', 'add', 'br0', 'type', 'bridge');
  await ipn('addr', 'add', `${subnet}.1/24`, 'dev', 'br0');
  await ipn('link', 'set', 'br0', 'up');

  // The guests' path to the API: QEMU runs pipe.js per connection, pipe.js connects here.
  const apiSock = path.join(dir, 'api.sock');
  const forwarder = net.createServer((c) => {
    const s = net.connect(opts.apiPort, '127.0.0.1');
    // Each side's end is passed on after its data (pipe), so a reply is never cut short.
    c.pipe(s).pipe(c);
    const end = () => (c.destroy(), s.destroy());
    c.on('error', end);
    s.on('error', end);
  });
  await new Promise<void>((resolve) => forwarder.listen(apiSock, resolve));
  const pipe = path.join(dir, 'pipe.js');
  // QEMU hands the command a socket as stdin/stdout, whose writes node buffers: exit only once the
  // API's last bytes are written out, or a reply the API sent just before it closed is lost.
  writeFileSync(
    pipe,
    [
      `const s = require('net').connect(${JSON.stringify(apiSock)});`,
      'process.stdin.pipe(s);',
      "s.on('data', (d) => process.stdout.write(d));",
      "s.on('end', () => process.stdout.write('', () => process.exit(0)));",
      "s.on('error', () => process.exit(1));",
      "process.stdout.on('error', () => process.exit(1));",
      '',
    ].join('\n'),
  );

  const vms: Vm[] = [];
  const procs = new Map<Vm, ChildProcess>();

  const launch = async (index: number, spec: Vm['spec'], existing?: Vm): Promise<Vm> => {
    const uuid = existing?.uuid ?? randomUUID();
    const disk = spec.disk ?? path.join(dir, `${spec.name}.qcow2`);
    if (!existsSync(disk)) execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', disk, `${spec.diskGiB}G`]);
    const tap = `lftap${index}`;
    if (!existing) {
      await ipn('tuntap', 'add', 'dev', tap, 'mode', 'tap');
      await ipn('link', 'set', tap, 'master', 'br0');
      await ipn('link', 'set', tap, 'up');
    }
    const { userMac, bridgeMac, bridgeIp, userIp } = plannedVm(index, subnet);
    const serialLog = path.join(artifacts, `vm-lab-${spec.name}-serial.log`);
    const monitorSocket = path.join(dir, `${spec.name}.monitor`);
    const pidFile = path.join(dir, `${spec.name}.pid`);
    const uefi = spec.firmware === 'uefi';
    // UEFI: OVMF follows the devices' bootindex; 'c' is the disk, 'd' the CD.
    const bootIndex = (dev: 'c' | 'd') => spec.bootOrder.indexOf(dev) + 1 || 9;
    const args = [
      'netns', 'exec', ns, 'qemu-system-x86_64',
      '-name', spec.name, ...(uefi ? ['-machine', 'q35', '-bios', OVMF] : ['-machine', 'pc', '-boot', `order=${spec.bootOrder}`]),
      '-accel', 'tcg', '-m', String(spec.memMiB), '-smp', String(spec.cpus),
      '-display', 'none', '-serial', `file:${serialLog}`, '-monitor', `unix:${monitorSocket},server=on,wait=off`, '-pidfile', pidFile,
      '-uuid', uuid,
      ...(spec.iso ? (uefi ? ['-drive', `file=${spec.iso},if=none,id=cd0,media=cdrom,readonly=on`, '-device', `ide-cd,drive=cd0,bus=ide.0,bootindex=${bootIndex('d')}`] : ['-cdrom', spec.iso]) : []),
      '-drive', `file=${disk},if=none,id=d0,format=qcow2`, '-device', `virtio-blk-pci,drive=d0,serial=${spec.diskSerial}${uefi ? `,bootindex=${bootIndex('c')}` : ''}`,
      '-netdev', `user,id=u0,restrict=on,net=10.0.2.0/24,dhcpstart=${userIp},hostname=${spec.name},guestfwd=tcp:${GUEST_API_HOST}:${opts.apiPort}-cmd:${process.execPath} ${pipe}`,
      '-device', `virtio-net-pci,netdev=u0,mac=${userMac}`,
      '-netdev', `tap,id=b0,ifname=${tap},script=no,downscript=no`,
      '-device', `virtio-net-pci,netdev=b0,mac=${bridgeMac}`,
    ];
    // `ip netns exec` execs QEMU: the child's pid is QEMU's.
    const child = spawn('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
    const startedAt = Date.now();
    let hwmKiB = 0;
    const readHwm = () => {
      try {
        hwmKiB = Math.max(hwmKiB, Number(/^VmHWM:\s+(\d+)/m.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0));
      } catch {
        /* exited: keep the last figure */
      }
      return hwmKiB;
    };
    // Sampled so the figure survives QEMU's exit.
    const sampler = setInterval(readHwm, 2000);
    child.once('exit', () => clearInterval(sampler));
    const vm: Vm = {
      spec,
      index,
      disk,
      serialLog,
      monitorSocket,
      bridgeMac,
      userMac,
      bridgeIp,
      uuid,
      userIp,
      startedAt,
      pid: () => child.pid,
      running: () => child.exitCode === null && child.signalCode === null,
      serial: () => (existsSync(serialLog) ? readFileSync(serialLog, 'utf8') : ''),
      hmp: (command) => hmp(monitorSocket, command),
      peakRssMiB: () => Math.round(readHwm() / 1024),
      kill: async () => {
        readHwm();
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise((r) => child.once('exit', r));
          child.kill('SIGKILL');
          await exited;
        }
        clearInterval(sampler);
      },
    };
    procs.set(vm, child);
    // QEMU fails fast on a bad argument: say so here rather than as a boot timeout later.
    await new Promise((r) => setTimeout(r, 500));
    if (!vm.running()) throw new Error(`qemu for ${spec.name} exited at once (${child.exitCode}): ${stderr}`);
    return vm;
  };

  const lab: VmLab = {
    ns,
    dir,
    cidr: `${subnet}.0/24`,
    guestApiUrl: `http://${GUEST_API_HOST}:${opts.apiPort}`,
    vms,
    async start(s) {
      const index = vms.length;
      const spec = { cpus: 1, memMiB: 1024, diskGiB: 120, diskSerial: `LFLAB${String(index).padStart(4, '0')}`, bootOrder: 'cd', firmware: 'bios' as const, ...s };
      const vm = await launch(index, spec);
      vms.push(vm);
      return vm;
    },
    async restart(vm, change = {}) {
      await vm.kill();
      const next = await launch(vm.index, { ...vm.spec, ...change }, vm);
      vms[vms.indexOf(vm)] = next;
      return next;
    },
    async destroy() {
      for (const vm of vms) await vm.kill().catch(() => undefined);
      await new Promise<void>((resolve) => forwarder.close(() => resolve()));
      await run('ip', ['netns', 'del', ns]).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return lab;
}

/** One HMP exchange: wait for the prompt, send the command, read until the next prompt. */
export function hmp(socket: string, command: string, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = net.connect(socket);
    let buf = '';
    let sent = false;
    const timer = setTimeout(() => (c.destroy(), reject(new Error(`HMP ${command}: no answer within ${timeoutMs} ms`))), timeoutMs);
    c.on('data', (d: Buffer) => {
      buf += d.toString();
      if (!sent && buf.includes('(qemu) ')) {
        sent = true;
        buf = '';
        c.write(`${command}\n`);
      } else if (sent && buf.includes('(qemu) ')) {
        clearTimeout(timer);
        c.end();
        // HMP echoes the command line with terminal escapes; the answer follows its first CRLF.
        const text = buf.slice(0, buf.lastIndexOf('(qemu) ')).replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*[A-Za-z]`, 'g'), '');
        resolve(text.slice(text.indexOf('\n') + 1).trim());
      }
    });
    c.on('error', (e) => (clearTimeout(timer), reject(e)));
    c.on('close', () => {
      // `quit` closes the socket without a prompt.
      if (sent) {
        clearTimeout(timer);
        resolve(buf.trim());
      }
    });
  });
}

/** Polls `fn` until it returns a value; on timeout the error names `what` and ends with the VMs' serial consoles. */
export async function waitFor<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs: number, what: string, vms: Vm[] = [], everyMs = 1000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const consoles = vms.map((vm) => `--- ${vm.spec.name} serial (last 2500 chars) ---\n${vm.serial().slice(-2500)}`).join('\n');
      throw new Error(`${what}: not within ${Math.round(timeoutMs / 1000)} s${last ? ` (last error: ${(last as Error).message})` : ''}\n${consoles}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * Requirements for lab VMs (HOST_REQUIREMENTS_FILE): 1 vCPU and 768 MiB pass, so 1 GiB VMs fit on a
 * small machine; the install disk must still have the default 100 GB, and the disk-speed limits are
 * loose (a qcow2 file under TCG is not a datacenter disk).
 */
export const LAB_REQUIREMENTS = {
  master: { cpuCores: 1, ramMib: 768, diskSyncHardMs: 10_000, diskSyncSoftMs: 5_000 },
  worker: { cpuCores: 1, ramMib: 768, diskSyncHardMs: 10_000, diskSyncSoftMs: 5_000 },
  sno: { cpuCores: 1, ramMib: 768, diskSyncHardMs: 10_000, diskSyncSoftMs: 5_000 },
};

/** The agent polls every `seconds` instead of the service's 60 s: the discovery unit again, with one Environment= line, as an infra-env ignition_config_override. */
export function fastPollOverride(seconds: number): string {
  const unit = [
    '[Unit]',
    'Description=Landfall host agent (VM lab: polls every few seconds)',
    '[Service]',
    'EnvironmentFile=/etc/landfall/agent.env',
    `Environment=LANDFALL_POLL_INTERVAL_SECONDS=${seconds}`,
    'ExecStart=/usr/local/bin/landfall-agent',
    'Restart=always',
    'RestartSec=5',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
  return JSON.stringify({ ignition: { version: '3.4.0' }, systemd: { units: [{ name: 'landfall-agent.service', enabled: true, contents: unit }] } });
}

/** The static_network_config entry that gives a VM its bridge address (NetworkManager keyfile by MAC); its user-mode NIC keeps DHCP. */
export function bridgeStaticNetwork(vm: Pick<Vm, 'bridgeMac' | 'bridgeIp'>): { network_yaml: string; mac_interface_map: Array<{ mac_address: string; logical_nic_name: string }> } {
  return {
    network_yaml: ['interfaces:', '  - name: eth1', '    type: ethernet', '    state: up', `    ipv4: {enabled: true, dhcp: false, address: [{ip: ${vm.bridgeIp}, prefix-length: 24}]}`].join('\n'),
    mac_interface_map: [{ mac_address: vm.bridgeMac, logical_nic_name: 'eth1' }],
  };
}

/** The MACs and bridge address VM `index` of a lab will have, before it is started (static_network_config must name them first). */
export function plannedVm(index: number, subnet = '192.168.150'): Pick<Vm, 'bridgeMac' | 'userMac' | 'bridgeIp' | 'userIp'> {
  const hex = index.toString(16).padStart(2, '0');
  return { userMac: `52:54:00:4c:a0:${hex}`, bridgeMac: `52:54:00:4c:b0:${hex}`, bridgeIp: `${subnet}.${10 + index}`, userIp: `10.0.2.${20 + index}` };
}
