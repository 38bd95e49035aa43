/**
 * A real install to disk, in VMs of the lab (test/support/vm-lab.ts): two
 * single-node clusters (control_plane_count 1, high_availability_mode None),
 * one VM each, installed at the same time through the API, Temporal and the
 * install workflow. In each VM the agent's install step writes Landfall's
 * installed OS (GRUB, the booted kernel, initrd and rootfs, the host's role
 * Ignition: agent/executors/landfall-disk.ts) to the VM's qcow2 disk and
 * reboots.
 *
 * - sno-disk (UEFI, OVMF): boot order disk then CD (the ISO stays in the
 *   drive, as on a datacenter host). It comes back from its disk, where the installed OS's
 *   first-boot service reports the remaining stages; the host and the
 *   cluster reach `installed` with no step by anyone.
 * - sno-iso (BIOS, SeaBIOS): boot order CD first. It boots the discovery ISO again, its
 *   agent registers, and the host and cluster wait in
 *   `installing-pending-user-action`; the test then does what the person at
 *   the console would (the boot order set to the disk through the VM's QEMU
 *   monitor, and a reset), and the install completes.
 *
 * What stays simulated (README "VM lab"): no Kubernetes runs in the installed
 * OS; its first-boot service reports "Joined" and, as the in-cluster
 * controller would, the monitored operators available, each saying it is
 * simulated. Figures: test-artifacts/vm-install.json.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- API JSON is read loosely here */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, openSync, readFileSync, readSync, closeSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { freePort } from '../../src/dev/process-utils';
import { call, PULL_SECRET } from '../support/api-harness';
import { startInstallHarness, type InstallHarness } from '../support/install-harness';
import { tempDir } from '../support/services';
import { LAB_REQUIREMENTS, bridgeStaticNetwork, buildDiscoveryOs, createVmLab, fastPollOverride, plannedVm, vmLabAvailable, waitFor, type Vm, type VmLab } from '../support/vm-lab';

const ARTIFACTS = path.resolve(__dirname, '../../test-artifacts');
const prereq = vmLabAvailable({ uefi: true });
const describeLab = prereq.ok ? describe : describe.skip;
// Bounds, not expectations (see README "VM lab" for the measured times).
const BOOT_BUDGET_MS = 360_000;
const INSTALL_BUDGET_MS = 300_000;

interface Sno {
  vm: Vm;
  clusterId: string;
  infraEnvId: string;
  hostId: string;
  installStartedAt?: number;
  figures: Record<string, unknown>;
}

/** The files of a newc cpio archive (names and contents). */
function cpioFiles(buf: Buffer): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  let o = 0;
  const pad = (n: number) => (n + 3) & ~3;
  while (o + 110 <= buf.length && buf.toString('ascii', o, o + 6) === '070701') {
    const field = (i: number) => parseInt(buf.toString('ascii', o + 6 + i * 8, o + 14 + i * 8), 16);
    const size = field(6);
    const nameSize = field(11);
    const name = buf.toString('utf8', o + 110, o + 110 + nameSize - 1);
    const dataAt = pad(o + 110 + nameSize);
    if (name === 'TRAILER!!!') break;
    out.set(name, buf.subarray(dataAt, dataAt + size));
    o = pad(dataAt + size);
  }
  return out;
}

describeLab(`VM lab: single-node installs to the VMs' disks${prereq.ok ? '' : ` (skipped: ${prereq.reason})`}`, () => {
  let h: InstallHarness;
  let lab: VmLab;
  let osDir: string;
  let base: string;
  const snos: Record<'disk' | 'iso', Sno> = {} as never;
  const started = Date.now();

  const hostOf = async (s: Sno) => (await call('GET', `${base}/infra-envs/${s.infraEnvId}/hosts/${s.hostId}`)).body;
  const clusterOf = async (s: Sno) => (await call('GET', `${base}/clusters/${s.clusterId}?exclude-hosts=true`)).body;
  /** A failed wait says where the service stands: host, cluster, and the install report's timeline. */
  const explained = <T>(s: Sno, p: Promise<T>): Promise<T> =>
    p.catch(async (e: Error) => {
      const host = await hostOf(s).catch(() => ({}));
      const cluster = await clusterOf(s).catch(() => ({}));
      const report = (await call('GET', `${base}/clusters/${s.clusterId}/install-report`).catch(() => ({ body: {} }))).body as any;
      const timeline = (report.timeline ?? []).slice(-25).map((t: any) => `${t.at} ${t.name} ${t.message}`).join('\n');
      throw new Error(`${e.message.split('\n')[0]}\nhost: ${host.status} (${host.status_info}) stage ${host.progress?.current_stage}\ncluster: ${cluster.status} (${cluster.status_info})\ntimeline:\n${timeline}\n${e.message.split('\n').slice(1).join('\n')}`);
    });

  beforeAll(async () => {
    osDir = buildDiscoveryOs();
    const port = await freePort();
    const reqFile = path.join(tempDir('vm-install'), 'requirements.json');
    writeFileSync(reqFile, JSON.stringify(LAB_REQUIREMENTS));
    h = await startInstallHarness({ API_PORT: String(port), SERVICE_BASE_URL: `http://10.0.2.100:${port}`, DISCOVERY_OS_ISO: path.join(osDir, 'live.iso'), HOST_REQUIREMENTS_FILE: reqFile });
    // The harness's own url names a port of its choosing; the API listens on API_PORT.
    base = `http://127.0.0.1:${port}/api/assisted-install/v2`;
    lab = await createVmLab({ apiPort: port, subnet: '192.168.151', artifactsDir: ARTIFACTS });
    // The disk-first VM boots UEFI (OVMF), the CD-first one BIOS (SeaBIOS, whose boot order the monitor changes).
    for (const [i, [key, bootOrder, firmware]] of ([['disk', 'cd', 'uefi'], ['iso', 'dc', 'bios']] as const).entries()) {
      const name = `sno-${key}`;
      const cluster = await call('POST', `${base}/clusters`, {
        body: { name, openshift_version: '1.32', pull_secret: PULL_SECRET, base_dns_domain: 'example.com', control_plane_count: 1, high_availability_mode: 'None', machine_networks: [{ cidr: lab.cidr }] },
      });
      expect(cluster.status).toBe(201);
      const ie = await call('POST', `${base}/infra-envs`, {
        body: { name, pull_secret: PULL_SECRET, cluster_id: cluster.body.id, image_type: 'full-iso', openshift_version: '1.32', ignition_config_override: fastPollOverride(3), static_network_config: [bridgeStaticNetwork(plannedVm(i, '192.168.151'))] },
      });
      expect(ie.status).toBe(201);
      const url = (await call('GET', `${base}/infra-envs/${ie.body.id}/downloads/image-url`)).body.url as string;
      const res = await fetch(url.replace(`http://10.0.2.100:${port}`, `http://127.0.0.1:${port}`));
      expect(res.status).toBe(200);
      const iso = path.join(lab.dir, `${name}.iso`);
      writeFileSync(iso, Buffer.from(await res.arrayBuffer()));
      const vm = await lab.start({ name, cpus: 1, memMiB: 1024, diskGiB: 120, diskSerial: `LFSNO${key.toUpperCase()}01`, iso, bootOrder, firmware });
      snos[key] = { vm, clusterId: cluster.body.id, infraEnvId: ie.body.id, hostId: '', figures: {} };
    }
    for (const s of Object.values(snos)) {
      const host = await waitFor(async () => ((await call('GET', `${base}/infra-envs/${s.infraEnvId}/hosts`)).body as any[]).find((x) => x.inventory), BOOT_BUDGET_MS, `${s.vm.spec.name} reports its inventory`, [s.vm], 2000);
      s.hostId = host.id;
      s.figures.discovery_inventory_s = (Date.now() - s.vm.startedAt) / 1000;
    }
    for (const s of Object.values(snos)) {
      await waitFor(async () => (await clusterOf(s)).status === 'ready', 120_000, `cluster ${s.vm.spec.name} ready`, [s.vm], 2000).catch(async (e: Error) => {
        const host = await hostOf(s);
        throw new Error(`${e.message.split('\n')[0]}: host ${host.status}: ${host.status_info}\n${host.validations_info}`);
      });
    }
    for (const s of Object.values(snos)) {
      const r = await call('POST', `${base}/clusters/${s.clusterId}/actions/install`);
      expect(r.status).toBe(202);
      s.installStartedAt = Date.now();
    }
  }, 25 * 60_000 + BOOT_BUDGET_MS + 120_000);

  afterAll(async () => {
    const out: Record<string, unknown> = { suite_s: (Date.now() - started) / 1000 };
    for (const [k, s] of Object.entries(snos)) out[k] = { ...s.figures, qemu_peak_rss_mib: s.vm.peakRssMiB(), vm: { ...s.vm.spec, iso: undefined } };
    mkdirSync(ARTIFACTS, { recursive: true });
    writeFileSync(path.join(ARTIFACTS, 'vm-install.json'), JSON.stringify(out, null, 2) + '\n');
    await lab?.destroy();
    await h?.stop();
  });

  it(
    'installs the disk-first VM to its disk: it reboots into the installed OS, reports its stages, and host and cluster reach installed with no manual step',
    async () => {
      const s = snos.disk;
      await explained(s, waitFor(async () => /landfall-init: .*installed OS: booted from disk/.test(s.vm.serial()), INSTALL_BUDGET_MS, 'sno-disk boots the installed OS from its disk', [s.vm], 2000));
      s.figures.install_to_disk_boot_s = (Date.now() - s.installStartedAt!) / 1000;
      const cluster = await explained(s, waitFor(async () => {
        const c = await clusterOf(s);
        return c.status === 'installed' ? c : c.status === 'error' ? Promise.reject(new Error(`cluster failed: ${c.status_info}`)) : undefined;
      }, INSTALL_BUDGET_MS, 'cluster sno-disk installed', [s.vm], 2000));
      s.figures.install_s = (Date.now() - s.installStartedAt!) / 1000;
      expect(cluster.status).toBe('installed');
      const host = await hostOf(s);
      expect(host.status).toBe('installed');
      expect(host.progress.current_stage).toBe('Done');

      // The stages as the service recorded them: the agent's before the reboot, the installed OS's after.
      const report = (await call('GET', `${base}/clusters/${s.clusterId}/install-report`)).body;
      const stages = report.hosts[0].stages.map((x: any) => x.stage);
      expect(stages).toEqual(['Starting installation', 'Installing', 'Writing image to disk', 'Rebooting', 'Joined', 'Done']);
      expect(report.hosts[0].stages.find((x: any) => x.stage === 'Joined').info).toMatch(/simulated/);
      const ops = (await call('GET', `${base}/clusters/${s.clusterId}/monitored-operators`)).body as any[];
      expect(ops.length).toBeGreaterThan(0);
      for (const op of ops) expect(op).toMatchObject({ status: 'available', status_info: expect.stringMatching(/simulated/) });

      // The serial console: discovery from the CD (the blank disk did not boot), then GRUB from the disk.
      const serial = s.vm.serial();
      const discovery = serial.indexOf('rootfs unpacked from /dev/sr0');
      const grub = serial.search(/landfall: booting the installed OS from hd\d/);
      expect(discovery).toBeGreaterThan(-1);
      expect(grub).toBeGreaterThan(discovery);
      expect(serial.slice(grub)).toMatch(/kernel arguments: BOOT_IMAGE=\(hd\d,msdos1\)\d+\+\d+ landfall\.installed=1 /);
      // Booted by the firmware's UEFI (EDK II is OVMF) from the EFI system partition.
      expect(serial.slice(grub)).toMatch(/efi: EFI v[\d.]+ by EDK II/);
      expect(serial.slice(grub)).toMatch(/ignition-apply: \d+ files, services: none \(not run: landfall-kubeadm\.service\)/);
      expect(serial.slice(grub)).toContain('landfall-first-boot: reported stage Done');
      expect(serial.slice(grub)).not.toContain('rootfs unpacked from /dev/sr0');

      // The disk, read from this side: an MBR with one active partition, holding the built images and the role Ignition.
      const raw = path.join(lab.dir, 'sno-disk.raw');
      execFileSync('qemu-img', ['convert', '-U', '-f', 'qcow2', '-O', 'raw', s.vm.disk, raw]);
      const table = execFileSync('sfdisk', ['-d', raw], { encoding: 'utf8' });
      expect(table).toMatch(/^label: dos$/m);
      expect(table).toMatch(new RegExp(`^label-id: 0x${s.hostId.slice(0, 8)}$`, 'm'));
      expect(table).toMatch(/^\S+1 : start=\s*2048, size=\s*\d+, type=da, bootable$/m);
      // The EFI system partition this VM's firmware booted.
      expect(table).toMatch(/^\S+2 : start=\s*\d+, size=\s*8192, type=ef$/m);
      const read = (offset: number, length: number) => {
        const fd = openSync(raw, 'r');
        const b = Buffer.alloc(length);
        readSync(fd, b, 0, length, offset);
        closeSync(fd);
        return b;
      };
      const part = 2048 * 512;
      const manifest = JSON.parse(read(part + 4096, 4096).toString('utf8').replace(/\0+$/, ''));
      const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
      const at = (name: string) => manifest.parts.find((p: any) => p.name === name);
      for (const f of ['vmlinuz', 'initrd.img', 'rootfs.img']) {
        expect(sha(read(part + at(f).sector * 512, at(f).bytes))).toBe(sha(readFileSync(path.join(osDir, f))));
      }
      const config = cpioFiles(gunzipSync(read(part + at('config.img').sector * 512, at('config.img').bytes)));
      const installed = JSON.parse(config.get('etc/landfall/installed.json')!.toString());
      expect(installed).toMatchObject({ host_id: s.hostId, cluster_id: s.clusterId, role: 'bootstrap', control_plane_count: 1 });
      // The role Ignition on the disk is the one the service serves this host.
      const served = await call('GET', `${base.replace(/\/v2$/, '')}/v2/infra-env/${s.infraEnvId}/hosts/${s.hostId}/downloads/ignition`);
      expect(served.status).toBe(200);
      expect(JSON.parse(config.get('config.ign')!.toString())).toEqual(JSON.parse(served.text));
      expect(JSON.parse(served.text).systemd.units.map((u: any) => u.name)).toEqual(['landfall-kubeadm.service']);
      expect([...config.keys()].some((k) => k.startsWith('etc/NetworkManager/system-connections/'))).toBe(true);
      rmSync(raw);
    },
    INSTALL_BUDGET_MS * 2 + 60_000,
  );

  it(
    'sends the CD-first VM, which boots discovery again after its reboot, to installing-pending-user-action; with the boot order fixed it completes',
    async () => {
      const s = snos.iso;
      const pending = await explained(s, waitFor(async () => {
        const host = await hostOf(s);
        return host.status === 'installing-pending-user-action' ? host : host.status === 'error' ? Promise.reject(new Error(`host failed: ${host.status_info}`)) : undefined;
      }, INSTALL_BUDGET_MS, 'sno-iso waits for the user', [s.vm], 2000));
      expect(pending.status_info).toMatch(/booted the installation image - please reboot and fix boot order to boot from disk/);
      await waitFor(async () => (await clusterOf(s)).status === 'installing-pending-user-action', 60_000, 'cluster sno-iso pending user action', [s.vm]);
      // The discovery system came up a second time from the CD.
      expect(s.vm.serial().split('rootfs unpacked from /dev/sr0').length - 1).toBe(2);
      s.figures.pending_user_action_s = (Date.now() - s.installStartedAt!) / 1000;

      // The person at the console: disk first, reset.
      await s.vm.hmp('boot_set c');
      await s.vm.hmp('system_reset');
      const fixedAt = Date.now();
      const cluster = await explained(s, waitFor(async () => {
        const c = await clusterOf(s);
        return c.status === 'installed' ? c : c.status === 'error' ? Promise.reject(new Error(`cluster failed: ${c.status_info}`)) : undefined;
      }, INSTALL_BUDGET_MS, 'cluster sno-iso installed after the boot order was fixed', [s.vm], 2000));
      s.figures.fixed_to_installed_s = (Date.now() - fixedAt) / 1000;
      expect(cluster.status).toBe('installed');
      expect((await hostOf(s)).status).toBe('installed');
      expect(s.vm.serial()).toMatch(/landfall: booting the installed OS from hd0[\s\S]*installed OS: booted from disk[\s\S]*landfall-first-boot: reported stage Done/);
    },
    INSTALL_BUDGET_MS * 2 + 60_000,
  );
});
