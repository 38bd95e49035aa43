/**
 * The real executor: reads this Linux machine and runs real commands. It is
 * what runs on a host booted from the discovery image. Destructive steps
 * (install writes the disk and reboots) only run when the service asks.
 * The install runs coreos-installer where there is one (Fedora CoreOS live
 * images); Landfall's own discovery OS has none and installs itself with
 * landfall-disk.ts.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, promises as fs, readdirSync, readFileSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { promises as dns } from 'node:dns';
import { gzipSync } from 'node:zlib';
import { tar } from '../../src/util/tar';
import type { ConnectivityPeer, Disk, Executor, InstallIo, Interface, Inventory, LogsContext } from '../types';
import { INSTALLED_OS_DIR, installLandfallOs, systemInstallSources } from './landfall-disk';

const run = promisify(execFile);

/**
 * What a host's logs archive holds, one file per source. Every source is
 * optional: a missing command or one that needs more rights than the agent has
 * leaves a file saying so, never a missing archive.
 */
export const LOG_SOURCES: ReadonlyArray<{ file: string; cmd: string; args: string[]; why: string }> = [
  { file: 'agent.journal.log', cmd: 'journalctl', args: ['-u', 'landfall-agent', '-b', '--no-pager', '-o', 'short-iso', '-n', '5000'], why: 'the agent service this boot' },
  { file: 'installer.journal.log', cmd: 'journalctl', args: ['-t', 'coreos-installer', '-b', '--no-pager', '-o', 'short-iso', '-n', '5000'], why: 'coreos-installer output this boot' },
  { file: 'boot.journal.log', cmd: 'journalctl', args: ['-b', '--no-pager', '-o', 'short-iso', '-n', '20000'], why: 'the last 20000 journal lines of this boot' },
  { file: 'dmesg.log', cmd: 'dmesg', args: ['--ctime'], why: 'kernel messages (disk and NIC errors)' },
  { file: 'ip-addr.txt', cmd: 'ip', args: ['addr'], why: 'addresses of every interface' },
  { file: 'ip-route.txt', cmd: 'ip', args: ['route'], why: 'routes' },
  { file: 'lsblk.txt', cmd: 'lsblk', args: ['-o', 'NAME,PATH,SIZE,TYPE,ROTA,RM,RO,MODEL,SERIAL,FSTYPE,MOUNTPOINT'], why: 'disks and partitions' },
];

const DMESG_TAIL_LINES = 2000;

const onPath = (cmd: string) => (process.env.PATH ?? '/usr/bin:/bin').split(':').some((d) => d && existsSync(path.join(d, cmd)));

async function tryRun(cmd: string, args: string[], timeoutMs = 30000): Promise<string | undefined> {
  try {
    return (await run(cmd, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 })).stdout;
  } catch {
    return undefined;
  }
}

const readText = (p: string): string | undefined => {
  try {
    return readFileSync(p, 'utf8').trim();
  } catch {
    return undefined;
  }
};

export const MIN_INSTALL_DISK_BYTES = 20e9;

/** Links in /dev/disk/by-id (or by-path) keyed by the device they point at. */
function diskLinks(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  try {
    for (const name of readdirSync(dir).sort()) {
      // Prefer wwn- and nvme-eui names, which survive moving the disk to another port.
      const target = realpathSync(path.join(dir, name));
      const current = out.get(target);
      if (!current || (/^wwn-|^nvme-eui/.test(name) && !/^wwn-|^nvme-eui/.test(path.basename(current)))) out.set(target, path.join(dir, name));
    }
  } catch {
    /* no such directory in containers */
  }
  return out;
}

interface LsblkDevice {
  name: string;
  path?: string;
  size: number | string;
  rota: boolean | string;
  rm: boolean | string;
  ro?: boolean | string;
  type: string;
  model?: string | null;
  serial?: string | null;
  wwn?: string | null;
  hctl?: string | null;
  vendor?: string | null;
}

const truthy = (v: unknown) => v === true || v === '1' || v === 1;

export async function readDisks(): Promise<Disk[]> {
  const out = await tryRun('lsblk', ['-J', '-b', '-d', '-o', 'NAME,PATH,SIZE,ROTA,RM,RO,TYPE,MODEL,SERIAL,WWN,HCTL,VENDOR']);
  if (!out) return [];
  const byId = diskLinks('/dev/disk/by-id');
  const byPath = diskLinks('/dev/disk/by-path');
  const devices = (JSON.parse(out) as { blockdevices: LsblkDevice[] }).blockdevices.filter((d) => d.type === 'disk');
  return devices.map((d) => {
    const devPath = d.path ?? `/dev/${d.name}`;
    const size = Number(d.size);
    const reasons = [
      ...(size < MIN_INSTALL_DISK_BYTES ? [`Disk is too small (disk only has ${Math.round(size / 1e9)} GB, but 20 GB are required)`] : []),
      ...(truthy(d.rm) ? ['Disk is removable'] : []),
      ...(truthy(d.ro) ? ['Disk is read-only'] : []),
    ];
    const id = byId.get(devPath) ?? byPath.get(devPath) ?? devPath;
    return {
      id,
      by_id: byId.get(devPath),
      by_path: byPath.get(devPath),
      name: d.name,
      path: devPath,
      drive_type: truthy(d.rota) ? 'HDD' : 'SSD',
      size_bytes: size,
      removable: truthy(d.rm),
      model: d.model?.trim() || undefined,
      serial: d.serial?.trim() || undefined,
      wwn: d.wwn || undefined,
      hctl: d.hctl || undefined,
      vendor: d.vendor?.trim() || undefined,
      installation_eligibility: { eligible: reasons.length === 0, not_eligible_reasons: reasons },
    };
  });
}

interface IpAddr {
  ifname: string;
  address?: string;
  mtu: number;
  operstate: string;
  flags: string[];
  link_type: string;
  addr_info: Array<{ family: string; local: string; prefixlen: number; scope: string }>;
}

export async function readInterfaces(): Promise<Interface[]> {
  const out = await tryRun('ip', ['-j', 'addr']);
  if (!out) return [];
  return (JSON.parse(out) as IpAddr[])
    .filter((l) => l.link_type !== 'loopback')
    .map((l) => {
      const sys = `/sys/class/net/${l.ifname}`;
      const speed = Number(readText(`${sys}/speed`) ?? -1);
      const type = existsSync(`${sys}/bonding`) ? 'bond' : existsSync(`/proc/net/vlan/${l.ifname}`) ? 'vlan' : existsSync(`${sys}/device`) ? 'physical' : 'virtual';
      return {
        name: l.ifname,
        mac_address: l.address ?? '',
        ipv4_addresses: l.addr_info.filter((a) => a.family === 'inet').map((a) => `${a.local}/${a.prefixlen}`),
        ipv6_addresses: l.addr_info.filter((a) => a.family === 'inet6' && a.scope !== 'link').map((a) => `${a.local}/${a.prefixlen}`),
        mtu: l.mtu,
        has_carrier: l.flags.includes('LOWER_UP'),
        speed_mbps: speed > 0 ? speed : 0,
        type,
        flags: l.flags,
      };
    });
}

async function readRoutes(): Promise<Inventory['routes']> {
  const routes: Inventory['routes'] = [];
  for (const [family, flag] of [[2, '-4'], [10, '-6']] as const) {
    const out = await tryRun('ip', ['-j', flag, 'route']);
    if (!out) continue;
    for (const r of JSON.parse(out) as Array<{ dst: string; gateway?: string; dev?: string; metric?: number }>) {
      routes.push({ interface: r.dev ?? '', destination: r.dst === 'default' ? (family === 2 ? '0.0.0.0' : '::') : r.dst, gateway: r.gateway, family, metric: r.metric });
    }
  }
  return routes;
}

export function readCpu(): Inventory['cpu'] {
  const info = readText('/proc/cpuinfo') ?? '';
  const count = (info.match(/^processor\s*:/gm) ?? []).length || os.cpus().length;
  const model = /^model name\s*:\s*(.+)$/m.exec(info)?.[1] ?? os.cpus()[0]?.model ?? 'unknown';
  const flags = (/^flags\s*:\s*(.+)$/m.exec(info)?.[1] ?? '').split(/\s+/).filter(Boolean);
  const mhz = Number(/^cpu MHz\s*:\s*([\d.]+)$/m.exec(info)?.[1] ?? 0);
  return { count, architecture: process.arch === 'x64' ? 'x86_64' : process.arch === 'arm64' ? 'aarch64' : process.arch, model_name: model, frequency: Math.round(mhz), flags };
}

export function readMemory(): Inventory['memory'] {
  const kb = Number(/^MemTotal:\s+(\d+) kB$/m.exec(readText('/proc/meminfo') ?? '')?.[1] ?? 0);
  return { physical_bytes: kb * 1024, usable_bytes: kb * 1024, physical_bytes_method: 'meminfo' };
}

export class LinuxExecutor implements Executor {
  readonly kind = 'linux' as const;
  private installer: ChildProcess | undefined;

  constructor(private readonly fetchIgnition?: () => Promise<Buffer>) {}

  /** The SMBIOS product UUID when the firmware has a real one, else one derived from /etc/machine-id. */
  async hostId(): Promise<string> {
    const uuid = readText('/sys/class/dmi/id/product_uuid')?.toLowerCase();
    if (uuid && /^[0-9a-f-]{36}$/.test(uuid) && !/^0{8}-|^f{8}-|^03000200-0400-0500-0006-000700080009$/.test(uuid)) return uuid;
    const seed = readText('/etc/machine-id') ?? os.hostname();
    const h = createHash('sha1').update(seed).digest('hex');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
  }

  clockOffsetSeconds(): number {
    return 0;
  }

  async inventory(): Promise<Inventory> {
    const dmi = (f: string) => readText(`/sys/class/dmi/id/${f}`);
    const cpu = readCpu();
    const vendor = dmi('sys_vendor') ?? 'unknown';
    const product = dmi('product_name') ?? 'unknown';
    const virtual = cpu.flags?.includes('hypervisor') || /QEMU|KVM|VMware|VirtualBox|Virtual Machine|Xen|Bochs/i.test(`${vendor} ${product}`);
    return {
      hostname: os.hostname(),
      cpu,
      memory: readMemory(),
      disks: await readDisks(),
      interfaces: await readInterfaces(),
      routes: await readRoutes(),
      system_vendor: { manufacturer: vendor, product_name: product, serial_number: dmi('product_serial'), virtual: Boolean(virtual) },
      boot: { current_boot_mode: existsSync('/sys/firmware/efi') ? 'uefi' : 'bios' },
      tpm_version: existsSync('/sys/class/tpm/tpm0') ? (readText('/sys/class/tpm/tpm0/tpm_version_major') === '2' ? '2.0' : '1.2') : 'none',
    };
  }

  async connectivityCheck(peers: ConnectivityPeer[]): Promise<unknown> {
    const probe = async (ip: string) => {
      const out = (await tryRun('ping', ['-c', '3', '-i', '0.2', '-W', '1', '-q', ip], 10000)) ?? '';
      const loss = Number(/([\d.]+)% packet loss/.exec(out)?.[1] ?? 100);
      return { loss, rtt: Number(/= [\d.]+\/([\d.]+)\//.exec(out)?.[1] ?? 0) };
    };
    const l2 = async (ip: string) => ((await tryRun('arping', ['-c', '1', '-w', '2', ip], 5000)) ?? '').match(/([0-9a-f]{2}(?::[0-9a-f]{2}){5})/i)?.[1]?.toLowerCase() ?? '';
    return {
      remote_hosts: await Promise.all(
        peers.map(async (peer) => {
          const targets = peer.nics.flatMap((n) => n.ip_addresses.map((a) => a.split('/')[0]!));
          const results = await Promise.all(targets.map(async (t) => ({ t, p: await probe(t), mac: await l2(t) })));
          return {
            host_id: peer.host_id,
            l2_connectivity: results.map((r) => ({ remote_ip_address: r.t, remote_mac: r.mac, successful: Boolean(r.mac) })),
            l3_connectivity: results.map((r) => ({ remote_ip_address: r.t, successful: r.p.loss < 100, average_rtt_ms: r.p.rtt, packet_loss_percentage: r.p.loss })),
          };
        }),
      ),
    };
  }

  /** A bounded sweep: at most 256 addresses per network, 32 pings at a time. */
  async freeNetworkAddresses(cidrs: string[], signal: AbortSignal): Promise<Array<{ network: string; free_addresses: string[] }>> {
    const out = [];
    for (const cidr of cidrs) {
      const [base, prefix] = cidr.split('/') as [string, string];
      if (!/^\d+\.\d+\.\d+\.\d+$/.test(base)) {
        out.push({ network: cidr, free_addresses: [] });
        continue;
      }
      const o = base.split('.').map(Number);
      const start = ((o[0]! << 24) | (o[1]! << 16) | (o[2]! << 8) | o[3]!) >>> 0;
      const size = Math.min(2 ** (32 - Number(prefix)), 256);
      const candidates = Array.from({ length: Math.max(0, size - 2) }, (_, i) => {
        const n = start + i + 1;
        return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
      });
      const free: string[] = [];
      for (let i = 0; i < candidates.length && !signal.aborted; i += 32) {
        await Promise.all(candidates.slice(i, i + 32).map(async (ip) => {
          if ((await tryRun('ping', ['-c', '1', '-W', '1', '-q', ip], 3000)) === undefined) free.push(ip);
        }));
      }
      out.push({ network: cidr, free_addresses: free.sort((a, b) => a.localeCompare(b, undefined, { numeric: true })) });
    }
    return out;
  }

  async ntpSynchronizer(): Promise<{ ntp_sources: Array<{ source_name: string; source_state: string }> }> {
    const out = await tryRun('chronyc', ['-c', 'sources']);
    if (out === undefined) throw new Error('chronyc is not available on this host: NTP synchronisation cannot be checked (install chrony)');
    const STATE: Record<string, string> = { '*': 'synced', '+': 'combined', '-': 'not_combined', '?': 'unreachable', x: 'error', '~': 'variable' };
    return { ntp_sources: out.trim().split('\n').filter(Boolean).map((line) => { const f = line.split(','); return { source_name: f[2] ?? '', source_state: STATE[f[1] ?? '?'] ?? 'unreachable' }; }) };
  }

  async domainResolution(args: { domains: Array<{ domain_name: string }> }): Promise<unknown> {
    const safe = <T>(p: Promise<T>, d: T) => p.catch(() => d);
    return {
      resolutions: await Promise.all(
        args.domains.map(async ({ domain_name }) => ({
          domain_name,
          ipv4_addresses: await safe(dns.resolve4(domain_name), [] as string[]),
          ipv6_addresses: await safe(dns.resolve6(domain_name), [] as string[]),
          cnames: await safe(dns.resolveCname(domain_name), [] as string[]),
        })),
      ),
    };
  }

  /** fio's fdatasync p99 when fio exists; otherwise our own fdatasync loop on a scratch file. */
  async diskSpeedCheck(args: { path: string }): Promise<{ path: string; io_sync_duration: number }> {
    const fio = await tryRun('fio', ['--name=landfall-disk-speed', `--filename=${args.path}`, '--rw=write', '--bs=2300', '--size=22m', '--fdatasync=1', '--output-format=json'], 480000);
    if (fio) {
      const job = (JSON.parse(fio) as { jobs: Array<{ sync?: { lat_ns?: { percentile?: Record<string, number> } } }> }).jobs[0];
      const p99 = job?.sync?.lat_ns?.percentile?.['99.000000'];
      if (p99) return { path: args.path, io_sync_duration: Math.round(p99 / 1e6) };
    }
    const file = path.join(os.tmpdir(), `landfall-fsync-${process.pid}`);
    const fh = await fs.open(file, 'w');
    const times: number[] = [];
    try {
      const buf = Buffer.alloc(2300, 1);
      for (let i = 0; i < 200; i++) {
        const t = process.hrtime.bigint();
        await fh.write(buf);
        await fh.datasync();
        times.push(Number(process.hrtime.bigint() - t) / 1e6);
      }
    } finally {
      await fh.close();
      await fs.rm(file, { force: true });
    }
    times.sort((a, b) => a - b);
    return { path: args.path, io_sync_duration: Math.round(times[Math.floor(times.length * 0.99)] ?? 0) };
  }

  async install(args: Record<string, unknown>, io: InstallIo): Promise<void> {
    const report = io.report;
    const disk = String(args.boot_device ?? '');
    if (!disk.startsWith('/dev/')) throw new Error('install needs boot_device');
    if (!this.fetchIgnition) throw new Error('no way to fetch this host\'s Ignition');
    await report('Starting installation', String(args.role ?? ''));
    const ignition = await this.fetchIgnition();
    await report('Installing', String(args.role ?? ''));
    await report('Writing image to disk');
    if (!onPath('coreos-installer') && existsSync(`${INSTALLED_OS_DIR}/core.img`)) {
      // Landfall's own discovery OS has no coreos-installer: it writes itself to the disk
      // (GRUB, the booted kernel/initrd/rootfs, the role Ignition; see landfall-disk.ts).
      const src = systemInstallSources(async (cmd, a) => (await run(cmd, a, { timeout: 60_000 })).stdout, readText('/proc/cmdline') ?? '');
      let last = 0;
      let reports = Promise.resolve();
      await installLandfallOs({ device: disk, ignition, args, hostId: await this.hostId(), now: new Date() }, src, (pct) => {
        if (pct - last < 25) return;
        last = pct;
        reports = reports.then(() => report('Writing image to disk', `${pct}%`)).catch(() => undefined);
      });
      await reports;
    } else {
      const ign = path.join(os.tmpdir(), 'landfall-host.ign');
      await fs.writeFile(ign, ignition, { mode: 0o600 });
      await new Promise<void>((resolve, reject) => {
        this.installer = spawn('coreos-installer', ['install', disk, '--ignition-file', ign, ...installerArgs(args.installer_args)], { stdio: ['ignore', 'pipe', 'pipe'] });
        let last = '';
        this.installer.stderr?.on('data', (d: Buffer) => (last = d.toString().slice(-500)));
        this.installer.once('error', (e) => reject(new Error(`coreos-installer could not start: ${e.message}`)));
        this.installer.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`coreos-installer exited ${code}: ${last}`))));
      });
    }
    await report('Rebooting');
    // The discovery system (and its journal) is gone after the reboot: its logs go up first.
    await io.uploadHostLogs?.();
    await run('systemctl', ['reboot']);
  }

  async logsGather(args: Record<string, unknown>, upload: (tarGz: Buffer) => Promise<void>, _signal?: AbortSignal, context?: LogsContext): Promise<void> {
    await upload(await gatherLinuxLogs(args, context));
  }

  async stopInstallation(): Promise<void> {
    this.installer?.kill('SIGTERM');
  }
}

/** Runs every log source and packs the results (and a summary of what worked) into one tar.gz. */
export async function gatherLinuxLogs(args: Record<string, unknown>, context?: LogsContext, sources = LOG_SOURCES): Promise<Buffer> {
  const now = new Date();
  const entries: Array<{ name: string; body: Buffer; mtime: Date }> = [];
  const summary: string[] = [`logs of ${os.hostname()} gathered ${now.toISOString()} (reason: ${String(args.reason ?? 'logs-gather')})`, ''];
  for (const src of sources) {
    const started = Date.now();
    try {
      let out = (await run(src.cmd, src.args, { timeout: 60000, maxBuffer: 64 * 1024 * 1024 })).stdout;
      if (src.cmd === 'dmesg') out = out.split('\n').slice(-DMESG_TAIL_LINES).join('\n');
      entries.push({ name: src.file, body: Buffer.from(out), mtime: now });
      summary.push(`ok      ${src.file} (${src.why}): ${Buffer.byteLength(out)} bytes in ${Date.now() - started} ms`);
    } catch (err) {
      const e = err as { code?: string | number; stderr?: string; message?: string };
      const reason = e.code === 'ENOENT' ? `${src.cmd} is not installed` : `${src.cmd} failed: ${(e.stderr || e.message || String(err)).trim().split('\n')[0]}`;
      entries.push({ name: src.file, body: Buffer.from(`unavailable: ${reason}\n`), mtime: now });
      summary.push(`missing ${src.file} (${src.why}): ${reason}`);
    }
  }
  entries.push({ name: 'agent.log', body: Buffer.from(`${(context?.agentLog ?? []).join('\n')}\n`), mtime: now });
  entries.unshift({ name: 'gather-summary.txt', body: Buffer.from(`${summary.join('\n')}\n`), mtime: now });
  return gzipSync(tar(entries));
}

/** installer_args as a JSON string of an array (assisted-service's InstallCmdRequest), or an array (older Landfall services). */
export function installerArgs(v: unknown): string[] {
  if (Array.isArray(v)) return v.map(String);
  if (typeof v !== 'string' || v.trim() === '') return [];
  const parsed: unknown = JSON.parse(v);
  if (!Array.isArray(parsed)) throw new Error('installer_args must be a JSON array of strings');
  return parsed.map(String);
}
