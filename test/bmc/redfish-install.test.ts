/**
 * Issue #16 end to end, through Redfish only: a single-node cluster
 * (control_plane_count 1, high_availability_mode None) installed on a libvirt
 * VM (QEMU TCG, BIOS `pc` machine) behind sushy-tools 2.2's libvirt driver
 * (test/bmc/redfish-lab.ts). The test never starts, stops or changes the
 * domain: it registers the VM's BMC address, and Landfall's enrolment
 * workflow powers it on from the discovery ISO by virtual media; the install
 * workflow then switches it to disk (boot override Hdd, ISO ejected) once the
 * image is written and restarts it through the BMC at Rebooting. The host
 * must reach `installed` without ever being `installing-pending-user-action`.
 *
 * Checked from outside Landfall: libvirt's own definition of the domain
 * (virsh dumpxml, read only) boots from the disk with no CD inserted, the
 * serial console shows the installed OS booted from the disk, and the disk
 * image (read after the domain is shut off) has the installed layout.
 *
 * What stays simulated (README "VM lab"): no Kubernetes runs in the installed
 * OS; its first-boot service reports "Joined" and, as the in-cluster
 * controller would, the monitored operators available, each saying it is
 * simulated. Figures: test-artifacts/redfish-install.json.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- API JSON is read loosely here */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, readSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort } from '../../src/dev/process-utils';
import { call, PULL_SECRET } from '../support/api-harness';
import { startInstallHarness, type InstallHarness } from '../support/install-harness';
import { LAB_REQUIREMENTS, buildDiscoveryOs, fastPollOverride } from '../support/vm-lab';
import { RedfishLab, labMissing, type Domain, type Sushy } from './redfish-lab';

const ROOT = path.resolve(__dirname, '../..');
const ARTIFACTS = path.join(ROOT, 'test-artifacts');
const PASSWORD = 'lf-bmc-install-S3cret';
const BOOT_BUDGET_MS = 150_000;
const INSTALL_BUDGET_MS = 240_000;
const missing = labMissing();

const describeLab = missing ? describe.skip : describe;
if (missing) console.warn(`BMC Redfish install test skipped: ${missing}`);

async function until<T>(what: string, budgetMs: number, fn: () => Promise<T | undefined>, onTimeout?: () => Promise<string>): Promise<T> {
  const deadline = Date.now() + budgetMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${budgetMs / 1000} s waiting for ${what}${onTimeout ? `: ${await onTimeout()}` : ''}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

describeLab('BMC: a single-node install through Redfish only (sushy-tools + libvirt)', () => {
  const lab = new RedfishLab();
  let h: InstallHarness;
  let sushy: Sushy;
  let dom: Domain;
  let base: string;
  let osDir: string;
  const creds = { username: 'admin', password: PASSWORD };
  const started = Date.now();
  const figures: Record<string, unknown> = {};

  beforeAll(async () => {
    osDir = buildDiscoveryOs();
    await lab.start();
    const port = await freePort();
    dom = lab.defineDomain({ name: 'lf-bmc-sno', apiPort: port, mac: '52:54:00:4c:46:c1', diskSerial: 'LFBMCSNO01', cpus: 1, memMiB: 1024 });
    sushy = await lab.startSushy([dom], { admin: PASSWORD });
    const reqFile = path.join(lab.dir, 'requirements.json');
    writeFileSync(reqFile, JSON.stringify(LAB_REQUIREMENTS));
    h = await startInstallHarness({ API_PORT: String(port), SERVICE_BASE_URL: `http://10.0.2.100:${port}`, BMC_IMAGE_BASE_URL: `http://127.0.0.1:${port}`, DISCOVERY_OS_ISO: path.join(osDir, 'live.iso'), HOST_REQUIREMENTS_FILE: reqFile });
    base = `http://127.0.0.1:${port}/api/assisted-install/v2`;
    figures.setup_s = (Date.now() - started) / 1000;
  }, 20 * 60_000);

  afterAll(async () => {
    figures.total_s = (Date.now() - started) / 1000;
    mkdirSync(ARTIFACTS, { recursive: true });
    writeFileSync(path.join(ARTIFACTS, 'redfish-install.json'), `${JSON.stringify({ ...figures, vm: dom && { cpus: dom.cpus, mem_mib: dom.memMiB, machine: 'pc', accel: 'tcg' } }, null, 2)}\n`);
    if (dom) writeFileSync(path.join(ARTIFACTS, 'redfish-install-serial.log'), lab.serial(dom));
    if (sushy) writeFileSync(path.join(ARTIFACTS, 'redfish-install-sushy.log'), sushy.log());
    await h?.stop().catch(() => undefined);
    await lab.cleanup();
    // The 120 GiB qcow2 (~100 MB written) and the lab's configs; the serial console and sushy's log are kept above.
    rmSync(lab.dir, { recursive: true, force: true });
  }, 60_000);

  it(
    'enrols the BMC, installs the cluster and the host boots its disk through the BMC: installed, never pending user action',
    async () => {
      const cluster = await call('POST', `${base}/clusters`, {
        body: { name: 'bmc-sno', openshift_version: '1.32', pull_secret: PULL_SECRET, base_dns_domain: 'example.com', control_plane_count: 1, high_availability_mode: 'None', machine_networks: [{ cidr: '10.0.2.0/24' }] },
      });
      expect(cluster.status).toBe(201);
      const clusterId = cluster.body.id as string;
      const ie = await call('POST', `${base}/infra-envs`, { body: { name: 'bmc-sno', pull_secret: PULL_SECRET, cluster_id: clusterId, image_type: 'full-iso', openshift_version: '1.32', ignition_config_override: fastPollOverride(3) } });
      expect(ie.status).toBe(201);
      const infraEnvId = ie.body.id as string;
      const hostOf = async () => (await call('GET', `${base}/infra-envs/${infraEnvId}/hosts/${dom.uuid}`)).body;
      const clusterOf = async () => (await call('GET', `${base}/clusters/${clusterId}?exclude-hosts=true`)).body;
      const diag = async () => {
        const host = await hostOf();
        return `host ${host.status}: ${host.status_info}; cluster ${(await clusterOf()).status}; libvirt ${lab.domainState(dom)}; serial tail:\n${lab.serial(dom).slice(-1500)}`;
      };
      expect(lab.domainState(dom)).toBe('shut off');

      // Enrol: the only thing the test does to the machine is name its BMC.
      const enrolledAt = Date.now();
      const res = await call('POST', `${base}/infra-envs/${infraEnvId}/bmc-hosts`, { body: { bmc_address: sushy.addressOf(dom), bmc_credentials: creds, boot_mac_address: dom.mac } });
      expect(res.status).toBe(202);
      const bmcId = res.body.id as string;
      await until('the VM to register and report its inventory', BOOT_BUDGET_MS, async () => {
        const b = (await call('GET', `${base}/infra-envs/${infraEnvId}/bmc-hosts/${bmcId}`)).body;
        if (b.status === 'failed') throw new Error(`enrolment failed: ${b.status_info}`);
        const found = ((await call('GET', `${base}/infra-envs/${infraEnvId}/hosts`)).body as any[]).find((x) => x.id === dom.uuid);
        if (found && !figures.enrol_to_registered_s) figures.enrol_to_registered_s = (Date.now() - enrolledAt) / 1000;
        return found?.inventory ? found : undefined;
      }, async () => `libvirt ${lab.domainState(dom)}; serial tail:\n${lab.serial(dom).slice(-1500)}`);
      figures.enrol_to_inventory_s = (Date.now() - enrolledAt) / 1000;
      const attached = await until('the enrolment to be attached', 30_000, async () => {
        const b = (await call('GET', `${base}/infra-envs/${infraEnvId}/bmc-hosts/${bmcId}`)).body;
        return b.status === 'attached' ? b : undefined;
      });
      expect(attached.host_id).toBe(dom.uuid);

      await until('the cluster to be ready', 120_000, async () => ((await clusterOf()).status === 'ready' ? true : undefined), async () => `${await diag()}\n${(await hostOf()).validations_info}`);
      figures.enrol_to_ready_s = (Date.now() - enrolledAt) / 1000;

      // Install, watching every status the host passes through.
      const seen: string[] = [];
      const r = await call('POST', `${base}/clusters/${clusterId}/actions/install`);
      expect(r.status).toBe(202);
      const installAt = Date.now();
      const done = await until(
        'the cluster to be installed',
        INSTALL_BUDGET_MS,
        async () => {
          const host = await hostOf();
          if (seen[seen.length - 1] !== host.status) seen.push(host.status);
          const c = await clusterOf();
          if (c.status === 'error' || host.status === 'error') throw new Error(`install failed: cluster ${c.status_info}; host ${host.status_info}; seen ${seen.join(' → ')}`);
          return c.status === 'installed' ? c : undefined;
        },
        async () => `seen ${seen.join(' → ')}; ${await diag()}`,
      );
      figures.install_s = (Date.now() - installAt) / 1000;
      expect(done.status).toBe('installed');
      const host = await hostOf();
      expect(host.status).toBe('installed');
      expect(host.progress.current_stage).toBe('Done');
      expect(seen).not.toContain('installing-pending-user-action');

      // The service's own history of the host: no status change through pending user action; the BMC acted twice.
      const events = (await call('GET', `${base}/events?cluster_id=${clusterId}&host_id=${dom.uuid}&limit=1000`)).body as any[];
      const messages = events.map((e) => e.message as string);
      figures.host_events = messages;
      // Non-empty history: its status changes and every stage it reported, Done last.
      expect(messages.some((m) => /updated status from \S+ to \S+/.test(m))).toBe(true);
      expect(messages.some((m) => /reached installation stage Done/.test(m))).toBe(true);
      expect(messages.filter((m) => m.includes('installing-pending-user-action') || m.includes('fix boot order'))).toEqual([]);
      const all = ((await call('GET', `${base}/events?infra_env_id=${infraEnvId}&cluster_level=true`)).body as any[]).map((e) => e.message as string).concat(messages);
      expect(all).toEqual(expect.arrayContaining([expect.stringMatching(/boot host .* from disk done \(boot override Hdd continuous, discovery ISO ejected\)/), expect.stringMatching(/restart host .* from disk done/)]));
      expect(all.join('\n')).not.toContain(PASSWORD);

      const report = (await call('GET', `${base}/clusters/${clusterId}/install-report`)).body;
      expect(report.hosts[0].stages.map((x: any) => x.stage)).toEqual(['Starting installation', 'Installing', 'Writing image to disk', 'Rebooting', 'Joined', 'Done']);
      expect(report.hosts[0].stages.find((x: any) => x.stage === 'Joined').info).toMatch(/simulated/);
      const ops = (await call('GET', `${base}/clusters/${clusterId}/monitored-operators`)).body as any[];
      expect(ops.length).toBeGreaterThan(0);
      for (const op of ops) expect(op).toMatchObject({ status: 'available', status_info: expect.stringMatching(/simulated/) });

      // libvirt's view (read only): running, booting the disk, no CD in the drive.
      expect(lab.domainState(dom)).toBe('running');
      // sushy-tools sets the boot device per device (<boot order='1'/> on the disk, the <os> boot list removed).
      const bootsFromDiskOnly = (xml: string) => {
        const disks = [...xml.matchAll(/<disk type='\w+' device='(\w+)'>([\s\S]*?)<\/disk>/g)].map((m) => ({ device: m[1] ?? '', body: m[2] ?? '' }));
        expect(xml).not.toMatch(/<os>[\s\S]*<boot dev=[\s\S]*<\/os>/);
        expect(disks.filter((d) => /<boot order='1'\/>/.test(d.body)).map((d) => d.device)).toEqual(['disk']);
        expect(disks.find((d) => d.device === 'disk')!.body).toContain(dom.disk);
        for (const cd of disks.filter((d) => d.device === 'cdrom')) expect(cd.body).not.toMatch(/<source /);
      };
      const defined = execFileSync('virsh', ['-c', 'qemu:///system', 'dumpxml', '--inactive', dom.name], { encoding: 'utf8' });
      const live = execFileSync('virsh', ['-c', 'qemu:///system', 'dumpxml', dom.name], { encoding: 'utf8' });
      mkdirSync(ARTIFACTS, { recursive: true });
      writeFileSync(path.join(ARTIFACTS, 'redfish-install-domain.xml'), defined);
      bootsFromDiskOnly(defined);
      bootsFromDiskOnly(live);
      expect(lab.definedCdrom(dom)).toBeUndefined();

      // The serial console: discovery from the CD, then GRUB and the installed OS from the disk.
      const serial = lab.serial(dom);
      const discovery = serial.indexOf('rootfs unpacked from /dev/sr0');
      const grub = serial.indexOf('landfall: booting the installed OS from hd0');
      expect(discovery).toBeGreaterThan(-1);
      expect(grub).toBeGreaterThan(discovery);
      expect(serial.slice(grub)).toMatch(/landfall-init: .*installed OS: booted from disk/);
      expect(serial.slice(grub)).toContain('landfall-first-boot: reported stage Done');
      expect(serial.slice(grub)).not.toContain('rootfs unpacked from /dev/sr0');
      figures.host_statuses = seen;
    },
    BOOT_BUDGET_MS + 150_000 + INSTALL_BUDGET_MS + 60_000,
  );

  it('left the installed layout on the VM\'s disk (read after the domain is shut off by cleanup)', async () => {
    // Reading a running guest's qcow2 is unsafe; the lab's cleanup destroys the domain, which the test may only do at the end.
    await lab.cleanup();
    const raw = path.join(lab.dir, 'sno.raw');
    execFileSync('qemu-img', ['convert', '-U', '-f', 'qcow2', '-O', 'raw', dom.disk, raw]);
    try {
      const table = execFileSync('sfdisk', ['-d', raw], { encoding: 'utf8' });
      expect(table).toMatch(/^label: dos$/m);
      expect(table).toMatch(new RegExp(`^label-id: 0x${dom.uuid.slice(0, 8)}$`, 'm'));
      expect(table).toMatch(/^\S+1 : start=\s*2048, size=\s*\d+, type=da, bootable$/m);
      const fd = openSync(raw, 'r');
      const read = (offset: number, length: number) => {
        const b = Buffer.alloc(length);
        readSync(fd, b, 0, length, offset);
        return b;
      };
      try {
        const part = 2048 * 512;
        const manifest = JSON.parse(read(part + 4096, 4096).toString('utf8').replace(/\0+$/, ''));
        const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
        for (const f of ['vmlinuz', 'initrd.img', 'rootfs.img']) {
          const at = manifest.parts.find((p: any) => p.name === f);
          expect(sha(read(part + at.sector * 512, at.bytes))).toBe(sha(readFileSync(path.join(osDir, f))));
        }
        // GRUB's boot.img in the MBR (its signature at 510).
        expect(read(510, 2).toString('hex')).toBe('55aa');
      } finally {
        closeSync(fd);
      }
    } finally {
      rmSync(raw, { force: true });
    }
    expect(spawnSync('virsh', ['-c', 'qemu:///system', 'domstate', dom.name]).status).not.toBe(0);
  }, 120_000);
});
