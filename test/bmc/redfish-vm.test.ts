/**
 * BMCs for real: a libvirt VM (QEMU TCG) behind sushy-tools 2.2's libvirt
 * driver is the machine and its Redfish BMC (test/bmc/redfish-lab.ts). The
 * test never starts QEMU itself: Landfall's enrolment workflow inserts the
 * infra-env's discovery ISO (Landfall's own discovery OS, served by the API)
 * as virtual media and powers the VM on through Redfish, and the agent in the
 * VM must register and report the VM's hardware. Power off, state reads and
 * the switch to disk are checked against libvirt's own view of the domain.
 *
 * The one fake here is FakeRefusingBmc, a few lines of HTTP that answer the
 * Redfish discovery calls and refuse InsertMedia with a 400: sushy-tools has
 * no switch to refuse virtual media, and only that refusal is tested with it.
 *
 * Figures (enrol to power-on, to registration, to inventory) go to
 * test-artifacts/bmc-redfish-boot.json and the serial console to
 * test-artifacts/bmc-redfish-serial.log.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- API JSON is read loosely here */
import { createServer, type Server } from 'node:http';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { builtDiscoveryOsIso } from '../../src/images/discovery-os';
import { freePort } from '../../src/dev/process-utils';
import { parseBmcAddress } from '../../src/bmc/address';
import { BmcError } from '../../src/bmc/driver';
import { RedfishDriver } from '../../src/bmc/redfish';
import { bootFromDiskNext } from '../../src/bmc/operations';
import { call, PULL_SECRET } from '../support/api-harness';
import { startInstallHarness, type InstallHarness } from '../support/install-harness';
import { RedfishLab, labMissing, type Domain, type Sushy } from './redfish-lab';

const ROOT = path.resolve(__dirname, '../..');
const ARTIFACTS = path.join(ROOT, 'test-artifacts');
const BOOT_BUDGET_MS = 180_000;
const PASSWORD = 'lf-bmc-S3cret-pw';
const iso = builtDiscoveryOsIso(ROOT);
// Only a lab that cannot exist here skips; set-up builds the discovery OS, so its absence is a failure (below).
const missing = labMissing();
if (!missing && !(iso && existsSync(iso))) throw new Error('the discovery OS is not linked at dist/discovery-os-image: run "bash scripts/setup.sh --test" (npm test does)');

async function until<T>(what: string, budgetMs: number, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + budgetMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${budgetMs / 1000} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** FakeRefusingBmc: a fake Redfish service (not an emulator) that refuses InsertMedia; for the refusal case only. */
function fakeRefusingBmc(): Promise<{ server: Server; port: number; inserts: number }> {
  const state = { inserts: 0 };
  const sys = '/redfish/v1/Systems/1';
  const server = createServer((req, res) => {
    const send = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.method === 'GET' && req.url === sys) return send(200, { Id: '1', UUID: '4c4c4544-0000-1111-2222-333344445555', PowerState: 'Off', Boot: {}, VirtualMedia: { '@odata.id': `${sys}/VirtualMedia` }, Links: { ManagedBy: [] } });
    if (req.method === 'GET' && req.url === `${sys}/VirtualMedia`) return send(200, { Members: [{ '@odata.id': `${sys}/VirtualMedia/Cd` }] });
    if (req.method === 'GET' && req.url === `${sys}/VirtualMedia/Cd`) return send(200, { Id: 'Cd', MediaTypes: ['CD', 'DVD'], Inserted: false, Image: '' });
    if (req.method === 'POST' && req.url === `${sys}/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia`) {
      state.inserts++;
      return send(400, { error: { code: 'Base.1.8.GeneralError', message: 'A general error has occurred.', '@Message.ExtendedInfo': [{ MessageId: 'Base.1.8.ActionNotSupported', Message: 'Virtual media is disabled on this BMC by policy.' }] } });
    }
    send(404, { error: { message: `no ${req.url}` } });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(Object.defineProperty({ server, port: (server.address() as { port: number }).port }, 'inserts', { get: () => state.inserts }) as any)));
}

const describeLab = missing ? describe.skip : describe;
if (missing) console.warn(`BMC Redfish VM tests skipped: ${missing}`);

describeLab('BMC: Redfish (sushy-tools + libvirt) powering a VM from the discovery ISO', () => {
  const lab = new RedfishLab();
  let h: InstallHarness;
  let sushy: Sushy;
  let dom: Domain;
  let port: number;
  let base: string;
  let infraEnvId: string;
  let driver: RedfishDriver;
  const creds = { username: 'admin', password: PASSWORD };

  beforeAll(async () => {
    await lab.start();
    port = await freePort();
    dom = lab.defineDomain({ name: 'lf-bmc-vm', apiPort: port, mac: '52:54:00:4c:46:b1', diskSerial: 'LFBMC0001' });
    sushy = await lab.startSushy([dom], { admin: PASSWORD });
    // The agent in the VM reaches the API at 10.0.2.100 (guestfwd); sushy-tools fetches the ISO from 127.0.0.1.
    h = await startInstallHarness({ API_PORT: String(port), SERVICE_BASE_URL: `http://10.0.2.100:${port}`, BMC_IMAGE_BASE_URL: `http://127.0.0.1:${port}`, DISCOVERY_OS_ISO: iso! });
    base = `http://127.0.0.1:${port}/api/assisted-install/v2`;
    const ie = await call('POST', `${base}/infra-envs`, { body: { name: 'bmc-lab', pull_secret: PULL_SECRET, image_type: 'full-iso', openshift_version: '1.32' } });
    expect(ie.status).toBe(201);
    infraEnvId = ie.body.id;
    driver = new RedfishDriver({ address: parseBmcAddress(sushy.addressOf(dom)), credentials: creds });
  }, 120_000);

  afterAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    if (dom) writeFileSync(path.join(ARTIFACTS, 'bmc-redfish-serial.log'), lab.serial(dom));
    if (sushy) writeFileSync(path.join(ARTIFACTS, 'bmc-sushy.log'), sushy.log());
    await h?.stop().catch(() => undefined);
    await lab.cleanup();
  }, 60_000);

  it('reads the VM through Redfish: its UUID, power state Off and a CD found under the System', async () => {
    const sys = await driver.system();
    expect(sys.uuid).toBe(dom.uuid);
    expect(sys.powerState).toBe('Off');
    expect(lab.domainState(dom)).toBe('shut off');
    const vm = await driver.virtualMedia();
    expect(vm.path).toBe(`/redfish/v1/Systems/${dom.uuid}/VirtualMedia/Cd`);
    expect(vm.inserted).toBe(false);
  });

  it('names the BMC, the call and the answer when the credentials are wrong, and never the password', async () => {
    const bad = new RedfishDriver({ address: parseBmcAddress(sushy.addressOf(dom)), credentials: { username: 'admin', password: 'wrong-Pa55word' } });
    const err = (await bad.powerState().catch((e: unknown) => e)) as BmcError;
    expect(err).toBeInstanceOf(BmcError);
    expect(err.message).toContain(`BMC ${sushy.addressOf(dom)}: GET /redfish/v1/Systems/${dom.uuid} answered 401`);
    expect(err.details).toMatchObject({ status: 401, method: 'GET', transient: false });
    expect(err.message).not.toContain('wrong-Pa55word');
  });

  it('enrolling the BMC powers the VM on from the discovery ISO by virtual media, and its agent registers with the VM\'s hardware', async () => {
    const started = Date.now();
    const res = await call('POST', `${base}/infra-envs/${infraEnvId}/bmc-hosts`, { body: { bmc_address: sushy.addressOf(dom), bmc_credentials: creds, boot_mac_address: dom.mac.toUpperCase() } });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ kind: 'BmcHost', status: 'enrolling', bmc_address: sushy.addressOf(dom), bmc_credentials_set: true, boot_mac_address: dom.mac });
    expect(res.text).not.toContain(PASSWORD);
    const bmcId = res.body.id as string;

    const booting = await until('the enrolment to power the VM on', 120_000, async () => {
      const b = (await call('GET', `${base}/infra-envs/${infraEnvId}/bmc-hosts/${bmcId}`)).body;
      if (b.status === 'failed') throw new Error(`enrolment failed: ${b.status_info}`);
      return b.status === 'enrolling' ? undefined : b;
    });
    const poweredOnS = (Date.now() - started) / 1000;
    expect(['booting', 'attached']).toContain(booting.status);
    expect(booting.system_uuid).toBe(dom.uuid);
    // libvirt's own view: running, with the ISO sushy-tools fetched from the API as its CD.
    expect(lab.domainState(dom)).toBe('running');
    expect(lab.definedCdrom(dom)).toContain(lab.pool ? path.join(lab.dir, 'pool') : '');
    expect(await driver.powerState()).toBe('On');
    expect((await driver.virtualMedia()).inserted).toBe(true);

    let registeredS = 0;
    const host = await until('the VM\'s agent to register and report its inventory', BOOT_BUDGET_MS, async () => {
      const list = (await call('GET', `${base}/infra-envs/${infraEnvId}/hosts`)).body as any[];
      const found = list.find((x) => x.id === dom.uuid);
      if (found && !registeredS) registeredS = (Date.now() - started) / 1000;
      return found?.inventory ? found : undefined;
    });
    const inventoryS = (Date.now() - started) / 1000;
    const inv = JSON.parse(host.inventory);
    expect(inv.interfaces.map((i: any) => i.mac_address)).toContain(dom.mac);
    const disk = inv.disks.find((d: any) => d.serial === 'LFBMC0001');
    expect(disk?.size_bytes).toBe(120 * 1024 ** 3);
    expect(inv.cpu.count).toBe(dom.cpus);
    // What the guest kernel counts: the domain's memory less what firmware and the kernel keep.
    expect(inv.memory.physical_bytes).toBeLessThanOrEqual(dom.memMiB * 1024 ** 2);
    expect(inv.memory.physical_bytes).toBeGreaterThan(dom.memMiB * 1024 ** 2 * 0.85);
    expect(inv.system_vendor?.product_name ?? '').not.toBe('');

    // The host carries its BMC: matched by the System UUID the BMC reported.
    const bmc = await until('the enrolment to be attached', 30_000, async () => {
      const b = (await call('GET', `${base}/infra-envs/${infraEnvId}/bmc-hosts/${bmcId}`)).body;
      return b.status === 'attached' ? b : undefined;
    });
    expect(bmc.host_id).toBe(dom.uuid);
    expect(bmc.status_info).toMatch(/matched by the BMC's system UUID/);
    const one = await call('GET', `${base}/infra-envs/${infraEnvId}/hosts/${dom.uuid}`);
    expect(one.body).toMatchObject({ bmc_address: sushy.addressOf(dom), bmc_credentials_set: true, boot_mac_address: dom.mac });
    expect(one.text).not.toContain(PASSWORD);
    const hostBmc = await call('GET', `${base}/infra-envs/${infraEnvId}/hosts/${dom.uuid}/bmc`);
    expect(hostBmc.body.id).toBe(bmcId);

    const events = ((await call('GET', `${base}/events?infra_env_id=${infraEnvId}&cluster_level=true`)).body as any[]).map((e) => e.message as string);
    expect(events).toEqual(expect.arrayContaining([expect.stringMatching(/enrolled; powering the machine on/), expect.stringMatching(/boot from the discovery ISO done \(virtual media inserted, boot override Cd once, power was Off, reset On\)/), expect.stringMatching(/BMC set to redfish\+http/)]));
    expect(events.join('\n')).not.toContain(PASSWORD);

    const figures = { powered_on_s: poweredOnS, registered_s: registeredS, inventory_s: inventoryS, vm: { cpus: dom.cpus, mem_mib: dom.memMiB, accel: 'tcg' } };
    mkdirSync(ARTIFACTS, { recursive: true });
    writeFileSync(path.join(ARTIFACTS, 'bmc-redfish-boot.json'), `${JSON.stringify(figures, null, 2)}\n`);
    console.log(`BMC Redfish boot: ${JSON.stringify(figures)}`);
  }, BOOT_BUDGET_MS + 150_000);

  it('switches the VM to boot from disk and ejects the ISO (what the install does after the image is written)', async () => {
    const r = await bootFromDiskNext(driver);
    expect(r.ejected).toBe(true);
    const sys = await driver.system();
    expect(sys.bootTarget).toBe('Hdd');
    expect(sys.bootMode).toBe('Continuous');
    expect((await driver.virtualMedia()).inserted).toBe(false);
    expect(lab.definedCdrom(dom)).toBeUndefined();
  });

  it('powers the VM off through Redfish, and the state read follows libvirt', async () => {
    expect(await driver.powerState()).toBe('On');
    await driver.reset('ForceOff');
    expect(await driver.powerState()).toBe('Off');
    expect(lab.domainState(dom)).toBe('shut off');
  });

  it('fails the enrolment when the real BMC refuses the credentials, naming the BMC and the call', async () => {
    const res = await call('POST', `${base}/infra-envs/${infraEnvId}/bmc-hosts`, { body: { bmc_address: sushy.addressOf(dom), bmc_credentials: { username: 'admin', password: 'not-the-Pa55word' } } });
    expect(res.status).toBe(202);
    const failed = await until('the enrolment to fail', 60_000, async () => {
      const b = (await call('GET', `${base}/infra-envs/${infraEnvId}/bmc-hosts/${res.body.id}`)).body;
      return b.status === 'failed' ? b : undefined;
    });
    expect(failed.status_info).toContain(`BMC ${sushy.addressOf(dom)}: GET /redfish/v1/Systems/${dom.uuid} answered 401`);
    expect(failed.status_info).not.toContain('not-the-Pa55word');
    expect(lab.domainState(dom)).toBe('shut off');
  });

  it('fails the enrolment when the BMC refuses virtual media (FakeRefusingBmc), naming the BMC, the call and its answer', async () => {
    const fake = await fakeRefusingBmc();
    try {
      const address = `redfish+http://127.0.0.1:${fake.port}/redfish/v1/Systems/1`;
      const res = await call('POST', `${base}/infra-envs/${infraEnvId}/bmc-hosts`, { body: { bmc_address: address, bmc_credentials: creds } });
      expect(res.status).toBe(202);
      const failed = await until('the enrolment to fail', 60_000, async () => {
        const b = (await call('GET', `${base}/infra-envs/${infraEnvId}/bmc-hosts/${res.body.id}`)).body;
        return b.status === 'failed' ? b : undefined;
      });
      expect(failed.status_info).toBe(`BMC ${address}: POST /redfish/v1/Systems/1/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia answered 400: A general error has occurred.; Virtual media is disabled on this BMC by policy.`);
      expect(failed.last_action).toMatchObject({ action: 'boot from the discovery ISO', ok: false });
      // A refusal is not retried: the BMC said no once.
      expect(fake.inserts).toBe(1);
      const events = (await call('GET', `${base}/events?infra_env_id=${infraEnvId}&cluster_level=true&severities=error`)).body as any[];
      expect(events.map((e) => e.message)).toContain(`BMC ${address}: boot from the discovery ISO failed: ${failed.status_info}`);
      expect(JSON.stringify(events)).not.toContain(PASSWORD);
    } finally {
      fake.server.close();
    }
  });
});
