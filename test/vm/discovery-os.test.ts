/**
 * Landfall's own discovery OS, for real: the live ISO scripts/build-discovery-os.sh
 * builds from Debian packages, served by an API configured as `npm start`
 * configures it (DISCOVERY_OS_ISO from the checkout's dist/discovery-os-image link,
 * no BASE_ISO_PATH, no base_images in the catalogue), read back by the real
 * coreos-installer, then booted under QEMU (TCG, no KVM): its agent must
 * register and report this VM's hardware.
 *
 * The VM's network is QEMU user-mode with restrict=on: the guest reaches
 * nothing but the API, forwarded from 10.0.2.100:<port> (SERVICE_BASE_URL)
 * to 127.0.0.1:<port> by a guestfwd (one small node pipe per connection), so
 * it never sends a packet off this machine. (Without restrict, the host's
 * loopback is 10.0.2.2, but the guest could then reach any address.) Figures (boot-to-register time, QEMU's memory)
 * are written to test-artifacts/discovery-os-<boot>-boot.json and the serial
 * console to test-artifacts/discovery-os-<boot>-serial.log.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- inventory JSON is read loosely here */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { builtDiscoveryOsIso } from '../../src/images/discovery-os';
import { freePort } from '../../src/dev/process-utils';
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';
import { tempDir } from '../support/services';

const ROOT = path.resolve(__dirname, '../..');
const coreosInstaller = path.join(ROOT, '.tools/cargo/bin/coreos-installer');
const ARTIFACTS = path.join(ROOT, 'test-artifacts');
const OVMF = '/usr/share/ovmf/OVMF.fd';
const haveQemu = spawnSync('qemu-system-x86_64', ['--version'], { stdio: 'ignore' }).status === 0 && existsSync(OVMF);

const VM = { cpus: 2, memMiB: 1536, diskBytes: 120 * 1024 ** 3, diskSerial: 'LFDISK0001', mac: '52:54:00:4c:46:01' };
const BOOT_BUDGET_MS = 240_000;

function ci(...args: string[]): string {
  if (!existsSync(coreosInstaller)) throw new Error(`coreos-installer not installed at ${coreosInstaller}; run "bash scripts/install-coreos-installer.sh" (npm test does)`);
  return execFileSync(coreosInstaller, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** The Ignition with the agent token (signed afresh for every download) masked, for comparison. */
const withoutToken = (ign: string) => JSON.parse(ign.replace(/LANDFALL_AGENT_TOKEN%3D[A-Za-z0-9_.-]+/, 'LANDFALL_AGENT_TOKEN%3D<token>')) as unknown;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('Landfall discovery OS', () => {
  let osDir: string;
  let h: ApiHarness;
  let port: number;
  /** What the host reaches the API at (the VM: 10.0.2.2), and what this test uses. */
  let publicUrl: string;
  let localBase: string;
  let work: string;
  let infraEnvId: string;
  let fullIso: string;
  let qemu: ChildProcess | undefined;
  const local = (u: string) => u.replace(publicUrl, `http://127.0.0.1:${port}`);

  beforeAll(async () => {
    // The same command set-up runs; cached, it answers at once.
    const built = spawnSync('bash', ['scripts/build-discovery-os.sh'], { cwd: ROOT, encoding: 'utf8', timeout: 20 * 60_000 });
    if (built.status !== 0) throw new Error(`scripts/build-discovery-os.sh failed (${built.status}):\n${built.stderr.slice(-3000)}`);
    osDir = built.stdout.trim().split('\n').pop()!;
    // Set-up links the build as dist/discovery-os-image; `landfall dev` finds it there (here in a scratch checkout).
    work = tempDir('discovery-os');
    const fakeCheckout = path.join(work, 'checkout');
    mkdirSync(path.join(fakeCheckout, 'dist'), { recursive: true });
    writeFileSync(path.join(fakeCheckout, 'package.json'), '{}');
    symlinkSync(osDir, path.join(fakeCheckout, 'dist', 'discovery-os-image'));
    const iso = builtDiscoveryOsIso(fakeCheckout);
    expect(iso).toBe(path.join(osDir, 'live.iso'));

    port = await freePort();
    publicUrl = `http://10.0.2.100:${port}`;
    h = await startApiHarness({ env: { API_PORT: String(port), SERVICE_BASE_URL: publicUrl, DISCOVERY_OS_ISO: iso! } });
    localBase = `http://127.0.0.1:${port}/api/assisted-install/v2`;
    const ie = await call('POST', `${localBase}/infra-envs`, {
      body: { name: 'vm', pull_secret: PULL_SECRET, image_type: 'full-iso', openshift_version: '1.32', kernel_arguments: [{ operation: 'append', value: 'landfall.test=vm' }] },
    });
    expect(ie.status).toBe(201);
    infraEnvId = ie.body.id;
  }, 25 * 60_000);

  afterAll(async () => {
    qemu?.kill('SIGKILL');
    await h?.stop();
  });

  async function downloadIso(type: 'full' | 'minimal', id = infraEnvId): Promise<string> {
    const u = await call('GET', `${localBase}/infra-envs/${id}/downloads/image-url`);
    expect(u.status).toBe(200);
    expect(u.body.url.startsWith(`${publicUrl}/images/${id}/`)).toBe(true);
    const res = await fetch(local(u.body.url).replace(/\/(full|minimal)\.iso/, `/${type}.iso`));
    expect(res.status).toBe(200);
    const file = path.join(work, `${id}-${type}.iso`);
    writeFileSync(file, Buffer.from(await res.arrayBuffer()));
    return file;
  }

  it('is linked into this checkout by set-up, where `landfall dev` finds it', () => {
    // npm start serves what this finds; a link made in the wrong place means 404 on every download.
    const linked = builtDiscoveryOsIso(ROOT);
    expect(linked).toBeDefined();
    expect(existsSync(linked!)).toBe(true);
  });

  it('serves the built live ISO with the discovery Ignition and kernel arguments coreos-installer reads back', async () => {
    fullIso = await downloadIso('full');
    const api = await call('GET', `${localBase}/infra-envs/${infraEnvId}/downloads/files?file_name=discovery.ign`);
    expect(api.status).toBe(200);
    expect(withoutToken(ci('iso', 'ignition', 'show', fullIso))).toEqual(withoutToken(api.text));
    expect(api.text).toContain(encodeURIComponent(`LANDFALL_SERVICE_URL=${publicUrl}`));

    const info = JSON.parse(readFileSync(path.join(osDir, 'build-info.json'), 'utf8')) as { kargs: string; label: string };
    expect(ci('iso', 'kargs', 'show', '--default', fullIso).trim()).toBe(info.kargs);
    expect(ci('iso', 'kargs', 'show', fullIso).trim()).toBe(`${info.kargs} landfall.test=vm`);
    expect(info.kargs).toContain(`coreos.liveiso=${info.label}`);

    // Outside its embed areas the download is the built image, byte for byte.
    expect(readFileSync(fullIso).length).toBe(readFileSync(path.join(osDir, 'live.iso')).length);
  });

  it('makes the minimal ISO fetch its rootfs from the boot artifacts, which are the built files', async () => {
    const minimal = await downloadIso('minimal');
    const kargs = ci('iso', 'kargs', 'show', minimal).trim();
    const rootfsUrl = `${publicUrl}/images/boot-artifacts/1.32/x86_64/rootfs.img`;
    expect(kargs.split(' ')).toContain(`coreos.live.rootfs_url=${rootfsUrl}`);
    expect(kargs).not.toContain('coreos.liveiso=');
    expect(withoutToken(ci('iso', 'ignition', 'show', minimal))).toEqual(withoutToken(ci('iso', 'ignition', 'show', fullIso)));
    for (const f of ['rootfs.img', 'vmlinuz', 'initrd.img']) {
      const res = await fetch(local(`${publicUrl}/images/boot-artifacts/1.32/x86_64/${f}`));
      expect(res.status).toBe(200);
      expect(sha256(Buffer.from(await res.arrayBuffer()))).toBe(sha256(readFileSync(path.join(osDir, f))));
    }
    // The iPXE script boots the same kernel and initrd.
    const ipxe = await call('GET', `${localBase}/infra-envs/${infraEnvId}/downloads/files?file_name=ipxe-script`);
    expect(ipxe.text).toContain(`kernel ${publicUrl}/images/boot-artifacts/1.32/x86_64/vmlinuz`);
  });

  it('answers 404 for an architecture the discovery OS is not built for', async () => {
    const ie = await call('POST', `${localBase}/infra-envs`, { body: { name: 'arm', pull_secret: PULL_SECRET, image_type: 'full-iso', openshift_version: '1.32', cpu_architecture: 'arm64' } });
    expect(ie.status).toBe(201);
    const u = await call('GET', `${localBase}/infra-envs/${ie.body.id}/downloads/image-url`);
    const r = await call('GET', local(u.body.url));
    expect(r.status).toBe(404);
    expect(r.body.reason).toMatch(/no base image is configured for release 1\.32 on arm64.*built for x86_64 only/);
  });

  const vmIt = haveQemu ? it : it.skip;
  if (!haveQemu) {
    // Stated once: the boot test needs Debian's qemu-system-x86 (scripts/install-system-tools.sh installs it as root).
    console.warn(`discovery OS boot tests skipped: qemu-system-x86_64 or ${OVMF} is missing (Debian packages qemu-system-x86 and ovmf)`);
  }

  interface Booted {
    inv: any;
    serial: string;
    figures: { registered_s: number; inventory_s: number; qemu_peak_rss_mib: number };
  }

  /** Boots an ISO with a blank virtio disk and one virtio NIC until the infra-env's host reports an inventory; QEMU is killed after. */
  /** `iso` is an ISO file, or a direct kernel boot (QEMU loads kernel and initrd as iPXE would). */
  async function bootUntilInventory(iso: string | { kernel: string; initrd: string; append: string }, ie: string, name: string, mac: string, firmware: 'bios' | 'uefi'): Promise<Booted> {
    const disk = path.join(work, `${name}.qcow2`);
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', disk, String(VM.diskBytes)]);
    // One pipe per guest connection to the API on this machine's loopback.
    const pipe = path.join(work, 'tcp-pipe.js');
    writeFileSync(pipe, `const s = require('net').connect(${port}, '127.0.0.1'); process.stdin.pipe(s); s.pipe(process.stdout); s.on('close', () => process.exit(0)); s.on('error', () => process.exit(1));\n`);
    mkdirSync(ARTIFACTS, { recursive: true });
    const serialLog = path.join(ARTIFACTS, `discovery-os-${name}-serial.log`);
    const args = [
      // BIOS: i440fx, isolinux, the CD on IDE. UEFI: q35 with OVMF, GRUB, the CD on AHCI.
      ...(firmware === 'uefi' ? ['-machine', 'q35', '-bios', OVMF] : ['-machine', 'pc']),
      '-accel', 'tcg', '-m', String(VM.memMiB), '-smp', String(VM.cpus),
      '-display', 'none', '-monitor', 'none', '-serial', `file:${serialLog}`, '-no-reboot',
      ...(typeof iso === 'string' ? ['-cdrom', iso, '-boot', 'd'] : ['-kernel', iso.kernel, '-initrd', iso.initrd, '-append', iso.append]),
      '-drive', `file=${disk},if=none,id=d0,format=qcow2`, '-device', `virtio-blk-pci,drive=d0,serial=${VM.diskSerial}`,
      '-netdev', `user,id=n0,restrict=on,guestfwd=tcp:10.0.2.100:${port}-cmd:${process.execPath} ${pipe}`,
      '-device', `virtio-net-pci,netdev=n0,mac=${mac}`,
    ];
    const started = Date.now();
    qemu = spawn('qemu-system-x86_64', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let qemuErr = '';
    qemu.stderr?.on('data', (d: Buffer) => (qemuErr += d.toString()));
    let peakRssKiB = 0;
    const sampleRss = () => {
      try {
        peakRssKiB = Math.max(peakRssKiB, Number(/^VmHWM:\s+(\d+)/m.exec(readFileSync(`/proc/${qemu!.pid}/status`, 'utf8'))?.[1] ?? 0));
      } catch {
        /* exited */
      }
    };
    const serial = () => (existsSync(serialLog) ? readFileSync(serialLog, 'utf8') : '');
    try {
      let registeredMs = 0;
      while (Date.now() - started < BOOT_BUDGET_MS) {
        if (qemu.exitCode !== null) throw new Error(`qemu exited with ${qemu.exitCode}: ${qemuErr}\n${serial().slice(-3000)}`);
        sampleRss();
        const found = ((await call('GET', `${localBase}/infra-envs/${ie}/hosts`)).body as Array<Record<string, unknown>>)[0];
        if (found && !registeredMs) registeredMs = Date.now() - started;
        if (found?.inventory) {
          sampleRss();
          const figures = { registered_s: registeredMs / 1000, inventory_s: (Date.now() - started) / 1000, qemu_peak_rss_mib: Math.round(peakRssKiB / 1024) };
          writeFileSync(path.join(ARTIFACTS, `discovery-os-${name}-boot.json`), JSON.stringify({ ...figures, vm: VM, ...(typeof iso === 'string' ? { iso_bytes: readFileSync(iso).length } : {}) }, null, 2) + '\n');
          console.log(`discovery OS boot (${name}): ${JSON.stringify(figures)}`);
          return { inv: JSON.parse(found.inventory as string), serial: serial(), figures };
        }
        await new Promise((r) => setTimeout(r, 1000));
      }
      throw new Error(`no inventory within ${BOOT_BUDGET_MS / 1000} s; serial console:\n${serial().slice(-4000)}`);
    } finally {
      qemu.kill('SIGKILL');
      qemu = undefined;
    }
  }

  vmIt(
    'boots the full ISO under QEMU (UEFI, GRUB), and its agent registers and reports the VM as it is',
    async () => {
      fullIso ??= await downloadIso('full');
      const { inv, serial } = await bootUntilInventory(fullIso, infraEnvId, 'full', VM.mac, 'uefi');
      expect(inv.cpu.count).toBe(VM.cpus);
      expect(inv.cpu.architecture).toBe('x86_64');
      // MemTotal is the RAM less what the firmware and kernel keep.
      expect(inv.memory.physical_bytes).toBeLessThanOrEqual(VM.memMiB * 1024 ** 2);
      expect(inv.memory.physical_bytes).toBeGreaterThan(VM.memMiB * 1024 ** 2 * 0.85);
      const disk0 = inv.disks.find((d: { name: string }) => d.name === 'vda');
      expect(disk0).toMatchObject({ path: '/dev/vda', size_bytes: VM.diskBytes, serial: VM.diskSerial, by_id: `/dev/disk/by-id/virtio-${VM.diskSerial}` });
      // A blank 120 GiB disk passes the service's size check for any role.
      expect(disk0.installation_eligibility).toEqual({ eligible: true, not_eligible_reasons: [] });
      expect(inv.interfaces).toEqual([expect.objectContaining({ mac_address: VM.mac })]);
      // QEMU's user-mode DHCP lease.
      expect(inv.interfaces[0].ipv4_addresses).toEqual(['10.0.2.15/24']);
      expect(inv.system_vendor.virtual).toBe(true);
      expect(inv.boot.current_boot_mode).toBe('uefi');
      // GRUB passed the kernel arguments Landfall wrote into the ISO's area.
      expect(serial).toMatch(/landfall-init: .*kernel arguments: .*coreos\.liveiso=\S+ .* landfall\.test=vm/);
      // The serial console shows the OS's own steps.
      expect(serial).toMatch(/landfall-init: .*rootfs unpacked from \/dev\/sr0/);
      expect(serial).toMatch(/ignition-apply: \d+ files, services: landfall-agent\.service/);
    },
    BOOT_BUDGET_MS + 60_000,
  );

  vmIt(
    'boots the minimal ISO (BIOS, isolinux): rootfs from the boot artifacts, then the static address of its NetworkManager profile',
    async () => {
      const mac = '52:54:00:4c:46:02';
      const networkYaml = [
        'interfaces:',
        '  - name: eth0',
        '    type: ethernet',
        '    state: up',
        '    ipv4: {enabled: true, dhcp: false, address: [{ip: 10.0.2.50, prefix-length: 24}]}',
        'dns-resolver: {config: {server: [10.0.2.3]}}',
      ].join('\n');
      const ie = await call('POST', `${localBase}/infra-envs`, {
        body: { name: 'vm-static', pull_secret: PULL_SECRET, image_type: 'minimal-iso', openshift_version: '1.32', static_network_config: [{ network_yaml: networkYaml, mac_interface_map: [{ mac_address: mac, logical_nic_name: 'eth0' }] }] },
      });
      expect(ie.status).toBe(201);
      const iso = await downloadIso('minimal', ie.body.id);
      const { inv, serial } = await bootUntilInventory(iso, ie.body.id, 'minimal', mac, 'bios');
      expect(inv.boot.current_boot_mode).toBe('bios');
      // isolinux passed the minimal ISO's kernel arguments: no coreos.liveiso, the rootfs URL.
      expect(serial).toMatch(new RegExp(`kernel arguments: .*coreos\\.live\\.rootfs_url=${publicUrl.replace(/\./g, '\\.')}/images/boot-artifacts/1\\.32/x86_64/rootfs\\.img`));
      expect(serial).not.toMatch(/kernel arguments: .*coreos\.liveiso=/);
      expect(serial).toContain(`rootfs unpacked from ${publicUrl}/images/boot-artifacts/1.32/x86_64/rootfs.img`);
      expect(serial).toMatch(/eth0: static profile mac-52:54:00:4c:46:02/);
      expect(inv.interfaces).toEqual([expect.objectContaining({ mac_address: mac, ipv4_addresses: ['10.0.2.50/24'] })]);
      expect(inv.cpu.count).toBe(VM.cpus);
    },
    BOOT_BUDGET_MS + 60_000,
  );

  vmIt(
    "boots like its iPXE script: kernel and initrd from the boot artifacts, rootfs and Ignition by URL",
    async () => {
      const mac = '52:54:00:4c:46:03';
      const ie = await call('POST', `${localBase}/infra-envs`, { body: { name: 'vm-ipxe', pull_secret: PULL_SECRET, image_type: 'full-iso', openshift_version: '1.32' } });
      expect(ie.status).toBe(201);
      const script = (await call('GET', `${localBase}/infra-envs/${ie.body.id}/downloads/files?file_name=ipxe-script`)).text;
      // QEMU has no iPXE HTTP boot on restricted user networking: it loads what the script names (fetched here) and passes its kernel line.
      const initrdUrl = /^initrd --name initrd (\S+)$/m.exec(script)![1]!;
      const kernelLine = /^kernel (\S+) initrd=initrd (.+)$/m.exec(script)!;
      const fetchTo = async (url: string, file: string) => {
        const r = await fetch(local(url));
        expect(r.status).toBe(200);
        writeFileSync(file, Buffer.from(await r.arrayBuffer()));
        return file;
      };
      const kernel = await fetchTo(kernelLine[1]!, path.join(work, 'ipxe-vmlinuz'));
      const initrd = await fetchTo(initrdUrl, path.join(work, 'ipxe-initrd.img'));
      expect(kernelLine[2]).toMatch(/ignition\.config\.url=\S+/);
      const { inv, serial } = await bootUntilInventory({ kernel, initrd, append: `${kernelLine[2]} console=ttyS0,115200n8` }, ie.body.id, 'ipxe', mac, 'bios');
      expect(serial).toContain(`rootfs unpacked from ${publicUrl}/images/boot-artifacts/1.32/x86_64/rootfs.img`);
      expect(serial).toMatch(/ignition-apply: \d+ files, services: landfall-agent\.service/);
      expect(inv.interfaces).toEqual([expect.objectContaining({ mac_address: mac })]);
    },
    BOOT_BUDGET_MS + 60_000,
  );
});
