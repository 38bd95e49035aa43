/**
 * A Redfish lab for the BMC tests: libvirtd (started here when it is not
 * running, stopped again by whoever started it), a transient storage pool,
 * libvirt domains (type qemu: TCG, no KVM) and sushy-tools 2.2 with its
 * libvirt driver in front of them: a real Redfish BMC for each domain.
 *
 * A domain's only NIC is QEMU user-mode networking (its DHCP names the host
 * after the domain) with restrict=on and one
 * guestfwd from 10.0.2.100:<port> to the API on 127.0.0.1:<port> (a small
 * node pipe per connection), passed through as qemu:commandline since libvirt
 * has no guestfwd: the guest reaches nothing but the API, and no packet
 * leaves this machine. sushy-tools fetches the ISO from 127.0.0.1 (the API's
 * BMC_IMAGE_BASE_URL) and listens on 127.0.0.1 only. The serial console file
 * is appended to across power cycles (discovery boot, then the installed OS).
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort, waitForPort } from '../../src/dev/process-utils';
import { tempDir } from '../support/services';

const ROOT = path.resolve(__dirname, '../..');
export const SUSHY = path.join(ROOT, '.tools/sushy-venv/bin/sushy-emulator');
const VENV_PY = path.join(ROOT, '.tools/sushy-venv/bin/python');
const URI = 'qemu:///system';

/** Why the lab cannot exist on this machine, or undefined when it can. */
export function labMissing(): string | undefined {
  if (!existsSync(SUSHY)) return `sushy-tools is not installed at ${SUSHY} (bash scripts/install-bmc-emulator.sh, run by scripts/setup.sh --test)`;
  for (const tool of ['libvirtd', 'virsh', 'qemu-system-x86_64', 'qemu-img']) if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is missing (Debian libvirt-daemon, libvirt-clients, qemu-system-x86, qemu-utils; bash scripts/install-bmc-emulator.sh)`;
  if (process.getuid?.() !== 0) return 'the BMC lab runs libvirtd as root (system URI) and this test is not root';
  return undefined;
}

const virsh = (...args: string[]) => execFileSync('virsh', ['-c', URI, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const virshOk = (...args: string[]) => spawnSync('virsh', ['-c', URI, ...args], { stdio: 'ignore' }).status === 0;

export interface Domain {
  name: string;
  uuid: string;
  mac: string;
  diskSerial: string;
  memMiB: number;
  cpus: number;
  serialLog: string;
  disk: string;
}

export interface Sushy {
  port: number;
  /** redfish+http://127.0.0.1:<port>/redfish/v1/Systems/<uuid> */
  addressOf(d: Domain): string;
  log(): string;
  stop(): Promise<void>;
}

export class RedfishLab {
  readonly dir = tempDir('redfish-lab');
  readonly pool = `landfall-bmc-${process.pid}-${Date.now().toString(36)}`;
  private startedLibvirtd = false;
  private readonly domains: Domain[] = [];
  private readonly sushies: ChildProcess[] = [];

  async start(): Promise<void> {
    if (!virshOk('version')) {
      // No systemd here: start the daemon ourselves, logging into the lab's folder.
      mkdirSync('/var/log/libvirt', { recursive: true });
      const conf = path.join(this.dir, 'libvirtd.conf');
      writeFileSync(conf, `log_outputs="3:file:${path.join(this.dir, 'libvirtd.log')}"\n`);
      execFileSync('libvirtd', ['--daemon', '--config', conf, '--pid-file', path.join(this.dir, 'libvirtd.pid')]);
      this.startedLibvirtd = true;
      const deadline = Date.now() + 20_000;
      while (!virshOk('version')) {
        if (Date.now() > deadline) throw new Error(`libvirtd did not answer within 20 s:\n${this.readLog('libvirtd.log')}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    mkdirSync(path.join(this.dir, 'pool'), { recursive: true });
    // Transient: it disappears with pool-destroy, and names no other test's files.
    virsh('pool-create-as', this.pool, 'dir', '--target', path.join(this.dir, 'pool'));
  }

  private readLog(f: string): string {
    const p = path.join(this.dir, f);
    return existsSync(p) ? readFileSync(p, 'utf8').slice(-3000) : '';
  }

  /** A powered-off machine with a blank disk, booting nothing until its BMC is told to. */
  defineDomain(opts: { name: string; apiPort: number; mac: string; diskSerial: string; memMiB?: number; cpus?: number; diskGiB?: number }): Domain {
    const d: Domain = { name: `${opts.name}-${process.pid}`, uuid: randomUUID(), mac: opts.mac, diskSerial: opts.diskSerial, memMiB: opts.memMiB ?? 1536, cpus: opts.cpus ?? 2, serialLog: path.join(this.dir, `${opts.name}-serial.log`), disk: path.join(this.dir, `${opts.name}.qcow2`) };
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', d.disk, `${opts.diskGiB ?? 120}G`]);
    const pipe = path.join(this.dir, 'tcp-pipe.js');
    writeFileSync(pipe, `const s = require('net').connect(${opts.apiPort}, '127.0.0.1'); process.stdin.pipe(s); s.pipe(process.stdout); s.on('close', () => process.exit(0)); s.on('error', () => process.exit(1));\n`);
    const xml = `<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>${d.name}</name>
  <uuid>${d.uuid}</uuid>
  <memory unit='MiB'>${d.memMiB}</memory>
  <vcpu>${d.cpus}</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type><boot dev='hd'/></os>
  <features><acpi/></features>
  <on_poweroff>destroy</on_poweroff><on_reboot>restart</on_reboot><on_crash>destroy</on_crash>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <disk type='file' device='disk'>
      <driver name='qemu' type='qcow2'/>
      <source file='${d.disk}'/>
      <target dev='vda' bus='virtio'/>
      <serial>${d.diskSerial}</serial>
    </disk>
    <serial type='file'><source path='${d.serialLog}' append='on'/><target port='0'/></serial>
    <video><model type='none'/></video>
    <memballoon model='none'/>
  </devices>
  <qemu:commandline>
    <qemu:arg value='-netdev'/>
    <qemu:arg value='user,id=lfnet0,restrict=on,hostname=${opts.name},guestfwd=tcp:10.0.2.100:${opts.apiPort}-cmd:${process.execPath} ${pipe}'/>
    <qemu:arg value='-device'/>
    <qemu:arg value='virtio-net-pci,netdev=lfnet0,mac=${d.mac},bus=pci.0,addr=0x10'/>
  </qemu:commandline>
</domain>
`;
    const file = path.join(this.dir, `${opts.name}.xml`);
    writeFileSync(file, xml);
    virsh('define', file);
    this.domains.push(d);
    return d;
  }

  /** libvirt's own word on the domain's state ("running", "shut off"), not Redfish's. */
  domainState(d: Domain): string {
    return virsh('domstate', d.name).trim();
  }

  /** The CD the persistent definition has (what sushy-tools' InsertMedia and EjectMedia change). */
  definedCdrom(d: Domain): string | undefined {
    const xml = virsh('dumpxml', '--inactive', d.name);
    const m = /<disk type='file' device='cdrom'>[\s\S]*?<source file='([^']+)'/.exec(xml);
    return m?.[1];
  }

  serial(d: Domain): string {
    return existsSync(d.serialLog) ? readFileSync(d.serialLog, 'utf8') : '';
  }

  /** sushy-tools 2.2 (libvirt driver) for these domains only, on 127.0.0.1; HTTP Basic when users are given. */
  async startSushy(domains: Domain[], users?: Record<string, string>): Promise<Sushy> {
    const port = await freePort();
    const conf = path.join(this.dir, `sushy-${port}.conf`);
    let auth = 'None';
    if (users) {
      // sushy-tools reads bcrypt htpasswd entries only; its venv has bcrypt.
      const file = path.join(this.dir, `htpasswd-${port}`);
      const lines = Object.entries(users).map(([u, p]) => `${u}:${execFileSync(VENV_PY, ['-c', 'import bcrypt,sys; print(bcrypt.hashpw(sys.argv[1].encode(), bcrypt.gensalt(rounds=4)).decode())', p], { encoding: 'utf8' }).trim()}`);
      writeFileSync(file, `${lines.join('\n')}\n`);
      auth = JSON.stringify(file);
    }
    writeFileSync(
      conf,
      [
        `SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'`,
        `SUSHY_EMULATOR_LISTEN_PORT = ${port}`,
        `SUSHY_EMULATOR_LIBVIRT_URI = '${URI}'`,
        `SUSHY_EMULATOR_STORAGE_POOL = '${this.pool}'`,
        `SUSHY_EMULATOR_AUTH_FILE = ${auth}`,
        // Only this lab's machines are visible through this BMC.
        `SUSHY_EMULATOR_ALLOWED_INSTANCES = ${JSON.stringify(domains.map((d) => d.uuid))}`,
        '',
      ].join('\n'),
    );
    const logFile = path.join(this.dir, `sushy-${port}.log`);
    const out: string[] = [];
    const p = spawn(SUSHY, ['--config', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
    p.stdout?.on('data', (b: Buffer) => out.push(b.toString()));
    p.stderr?.on('data', (b: Buffer) => out.push(b.toString()));
    this.sushies.push(p);
    await waitForPort('127.0.0.1', port, 30_000, `sushy-emulator (${conf})`, p);
    return {
      port,
      addressOf: (d) => `redfish+http://127.0.0.1:${port}/redfish/v1/Systems/${d.uuid}`,
      log: () => {
        const text = out.join('');
        writeFileSync(logFile, text);
        return text;
      },
      stop: async () => {
        p.kill('SIGTERM');
        await new Promise((r) => setTimeout(r, 200));
        if (p.exitCode === null) p.kill('SIGKILL');
      },
    };
  }

  /** Everything this lab made, whatever state it is in; never throws. */
  async cleanup(): Promise<void> {
    for (const p of this.sushies) if (p.exitCode === null) p.kill('SIGKILL');
    for (const d of this.domains) {
      if (virshOk('domstate', d.name)) {
        spawnSync('virsh', ['-c', URI, 'destroy', d.name], { stdio: 'ignore' });
        spawnSync('virsh', ['-c', URI, 'undefine', d.name], { stdio: 'ignore' });
      }
    }
    spawnSync('virsh', ['-c', URI, 'pool-destroy', this.pool], { stdio: 'ignore' });
    if (this.startedLibvirtd) {
      const pidFile = path.join(this.dir, 'libvirtd.pid');
      const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : 0;
      if (pid > 0) {
        try {
          process.kill(pid, 'SIGTERM');
        } catch {
          /* already gone */
        }
        const deadline = Date.now() + 10_000;
        while (Date.now() < deadline) {
          try {
            process.kill(pid, 0);
          } catch {
            break;
          }
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    }
  }
}
