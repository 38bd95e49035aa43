/**
 * The BMC REST extension against a real API and PostgreSQL (no BMC is called
 * here: that is redfish-vm.test.ts): a host's BMC set, read and removed;
 * credentials sealed at rest and in no response; bad input refused with 400s
 * in the API's error shape naming the field; an enrolment attached to the
 * host that registers with its boot MAC.
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- API JSON is read loosely here */
import { randomUUID } from 'node:crypto';
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';
import { createBmcRepo } from '../../src/bmc/bmc-repo';
import { CredentialsBox, loadCredentialsKey } from '../../src/bmc/credentials';

const PASSWORD = 'Sup3r-secret-BMC-pw';
const ADDRESS = 'redfish-virtualmedia+https://10.1.2.3/redfish/v1/Systems/System.Embedded.1';

describe('BMC API (Landfall extension)', () => {
  let h: ApiHarness;
  let infraEnvId: string;
  let hostId: string;

  beforeAll(async () => {
    h = await startApiHarness();
    const ie = await call('POST', `${h.base}/infra-envs`, { body: { name: 'bmc-api', pull_secret: PULL_SECRET, openshift_version: '1.32' } });
    infraEnvId = ie.body.id;
    hostId = randomUUID();
    expect((await call('POST', `${h.base}/infra-envs/${infraEnvId}/hosts`, { body: { host_id: hostId } })).status).toBe(201);
  });
  afterAll(() => h?.stop());

  const url = () => `${h.base}/infra-envs/${infraEnvId}/hosts/${hostId}/bmc`;

  it('sets a host\'s BMC, shows it on the host without the credentials, and seals them at rest', async () => {
    const put = await call('PUT', url(), { body: { bmc_address: ADDRESS, bmc_credentials: { username: 'root', password: PASSWORD }, boot_mac_address: '52-54-00-AA-BB-01' } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ kind: 'BmcHost', host_id: hostId, bmc_address: ADDRESS, bmc_credentials_set: true, boot_mac_address: '52:54:00:aa:bb:01', status: 'attached', simulated: false });
    for (const r of [put, await call('GET', url()), await call('GET', `${h.base}/infra-envs/${infraEnvId}/hosts/${hostId}`), await call('GET', `${h.base}/infra-envs/${infraEnvId}/hosts`), await call('GET', `${h.base}/infra-envs/${infraEnvId}/bmc-hosts`), await call('GET', `${h.base}/events?infra_env_id=${infraEnvId}`)]) {
      expect(r.text).not.toContain(PASSWORD);
      expect(r.text).not.toContain('"root"');
    }
    const host = (await call('GET', `${h.base}/infra-envs/${infraEnvId}/hosts/${hostId}`)).body;
    expect(host).toMatchObject({ bmc_address: ADDRESS, bmc_credentials_set: true, boot_mac_address: '52:54:00:aa:bb:01' });

    // At rest: ciphertext only, which opens with the deployment's key and only for its own record.
    const row = await createBmcRepo(h.db).forHost(infraEnvId, hostId);
    expect(row!.credentials_sealed).toMatch(/^v1\./);
    expect(row!.credentials_sealed).not.toContain(PASSWORD);
    expect(JSON.stringify(await h.db('bmc_hosts').select('*'))).not.toContain(PASSWORD);
    const box = new CredentialsBox(await loadCredentialsKey(h.db, undefined));
    expect(box.open(row!.credentials_sealed, row!.id)).toEqual({ username: 'root', password: PASSWORD });
    expect(() => box.open(row!.credentials_sealed, randomUUID())).toThrow(/do not open/);

    const events = (await call('GET', `${h.base}/events?infra_env_id=${infraEnvId}`)).body as any[];
    expect(events.map((e) => e.message)).toContain(`Host ${hostId}: BMC set to ${ADDRESS}`);
  });

  it.each([
    ['no address', { bmc_credentials: { username: 'u', password: 'p' } }, /bmc_address/],
    ['an unknown scheme', { bmc_address: 'ipmi://10.0.0.1', bmc_credentials: { username: 'u', password: 'p' } }, /scheme ipmi is not supported/],
    ['credentials in the address', { bmc_address: 'redfish://root:pw@10.0.0.1/redfish/v1/Systems/1', bmc_credentials: { username: 'u', password: 'p' } }, /must not carry a user or password/],
    ['a path that is no System', { bmc_address: 'redfish://10.0.0.1/redfish/v1/Managers/1', bmc_credentials: { username: 'u', password: 'p' } }, /not a Redfish system/],
    ['no credentials', { bmc_address: ADDRESS }, /bmc_credentials/],
    ['an empty password', { bmc_address: ADDRESS, bmc_credentials: { username: 'u', password: '' } }, /password/],
    ['a bad MAC', { bmc_address: ADDRESS, bmc_credentials: { username: 'u', password: 'p' }, boot_mac_address: '52:54:00:zz' }, /boot_mac_address/],
    ['an unknown field', { bmc_address: ADDRESS, bmc_credentials: { username: 'u', password: 'p' }, ipmi_port: 623 }, /ipmi_port|additional/],
  ])('refuses %s with a 400 in the error shape', async (_name, body, reason) => {
    const r = await call('PUT', url(), { body });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ kind: 'Error', code: '400' });
    expect(r.body.reason).toMatch(reason);
    const e = await call('POST', `${h.base}/infra-envs/${infraEnvId}/bmc-hosts`, { body });
    expect(e.status).toBe(400);
    expect(e.body.reason).toMatch(reason);
  });

  it('answers 404 for the BMC of an unknown host', async () => {
    const r = await call('PUT', `${h.base}/infra-envs/${infraEnvId}/hosts/${randomUUID()}/bmc`, { body: { bmc_address: ADDRESS, bmc_credentials: { username: 'u', password: 'p' } } });
    expect(r.status).toBe(404);
  });

  it('attaches an enrolment to the host that registers with its boot MAC, and removes a host\'s BMC', async () => {
    // An enrolment as the workflow leaves it once the machine is powered on (its UUID unknown to the BMC here).
    const repo = createBmcRepo(h.db);
    const box = new CredentialsBox(await loadCredentialsKey(h.db, undefined));
    const id = randomUUID();
    await repo.insert({ id, infra_env_id: infraEnvId, host_id: null, address: 'simulated://rack1-u07', credentials_sealed: box.seal({ username: 'u', password: PASSWORD }, id), disable_certificate_verification: false, boot_mac_address: '52:54:00:aa:bb:07', system_uuid: null, status: 'booting', status_info: 'powered on' });
    const newHost = randomUUID();
    expect((await call('POST', `${h.base}/infra-envs/${infraEnvId}/hosts`, { body: { host_id: newHost } })).status).toBe(201);
    expect((await call('GET', `${h.base}/infra-envs/${infraEnvId}/bmc-hosts/${id}`)).body.status).toBe('booting');
    const inventory = { hostname: 'rack1-u07', interfaces: [{ name: 'eno1', mac_address: '52:54:00:AA:BB:07', ipv4_addresses: ['192.0.2.7/24'] }] };
    expect((await call('POST', `${h.base}/infra-envs/${infraEnvId}/hosts/${newHost}/instructions`, { body: { step_type: 'inventory', step_id: 'inventory-1', exit_code: 0, output: JSON.stringify(inventory) } })).status).toBe(204);
    const b = (await call('GET', `${h.base}/infra-envs/${infraEnvId}/bmc-hosts/${id}`)).body;
    expect(b).toMatchObject({ status: 'attached', host_id: newHost, simulated: true });
    expect(b.status_info).toMatch(/matched by boot MAC address/);
    const host = await call('GET', `${h.base}/infra-envs/${infraEnvId}/hosts/${newHost}`);
    expect(host.body).toMatchObject({ bmc_address: 'simulated://rack1-u07', bmc_credentials_set: true });
    expect(host.text).not.toContain(PASSWORD);
    const events = ((await call('GET', `${h.base}/events?infra_env_id=${infraEnvId}&host_id=${newHost}`)).body as any[]).map((e) => e.message as string);
    expect(events).toContain('BMC simulated://rack1-u07 (simulated BMC): updated status from booting to attached (Host ' + newHost + ' registered (matched by boot MAC address))');

    expect((await call('DELETE', `${h.base}/infra-envs/${infraEnvId}/hosts/${newHost}/bmc`)).status).toBe(204);
    expect((await call('GET', `${h.base}/infra-envs/${infraEnvId}/hosts/${newHost}/bmc`)).status).toBe(404);
    const after = (await call('GET', `${h.base}/infra-envs/${infraEnvId}/hosts/${newHost}`)).body;
    expect(after.bmc_address).toBeUndefined();
    expect(after.bmc_credentials_set).toBeUndefined();
  });
});
