/**
 * The poll's answer depends on nothing one API process remembers: two API
 * processes on one database hand out a repeating step once between them, and
 * a host that registers again (at either) is asked everything afresh.
 */
import { randomUUID } from 'node:crypto';
import { parseConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { startApi, type RunningApi } from '../../src/api/server';
import { freePort } from '../../src/dev/process-utils';
import { call, IN_PROCESS_API_ENV, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';
import { tempDir } from '../support/services';
import { smallInventory } from '../support/small-inventory';

let a: ApiHarness;
let b: RunningApi;
let bBase: string;
beforeAll(async () => {
  a = await startApiHarness();
  const port = await freePort();
  b = await startApi(
    parseConfig({ API_HOST: '127.0.0.1', API_PORT: String(port), DATABASE_URL: a.pg.url, TEMPORAL_ADDRESS: '127.0.0.1:1', STORAGE_LOCAL_DIR: tempDir('api-b'), API_VALIDATE_RESPONSES: 'true', ...IN_PROCESS_API_ENV }),
    createLogger({ log: { level: 'silent', format: 'json' } }, 'api-b'),
  );
  bBase = `http://127.0.0.1:${port}/api/assisted-install/v2`;
});
afterAll(async () => {
  await b?.close();
  await a?.stop();
});

it('hands out a repeating step once across two API processes, and afresh after a new registration', async () => {
  const c = (await call('POST', `${a.base}/clusters`, { body: { name: 'two-apis', openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com' } })).body;
  const ie = (await call('POST', `${a.base}/infra-envs`, { body: { name: 'two-apis-ie', pull_secret: PULL_SECRET, cluster_id: c.id } })).body;
  const [h1, h2] = [randomUUID(), randomUUID()];
  for (const [id, n] of [[h1, 11], [h2, 12]] as const) {
    expect((await call('POST', `${a.base}/infra-envs/${ie.id}/hosts`, { body: { host_id: id } })).status).toBe(201);
    expect((await call('POST', `${a.base}/infra-envs/${ie.id}/hosts/${id}/instructions`, { body: { step_type: 'inventory', step_id: `inventory-${n}`, output: smallInventory(`h${n}`, `10.9.0.${n}`) } })).status).toBe(204);
  }
  const types = async (base: string) => ((await call('GET', `${base}/infra-envs/${ie.id}/hosts/${h1}/instructions`)).body.instructions as Array<{ step_type: string }>).map((s) => s.step_type);
  // Validated off the agent's request (refresh-queue.ts): a person's read of the cluster settles it, and the
  // hosts leave discovering, whose plan is the inventory alone.
  const settled = async () => expect((await call('GET', `${a.base}/clusters/${c.id}`)).status).toBe(200);
  await settled();
  expect(await types(a.base)).toContain('connectivity-check');
  // The other process knows it went out: not again within its repeat interval.
  expect(await types(bBase)).not.toContain('connectivity-check');
  expect(await types(a.base)).not.toContain('connectivity-check');
  // Registering again (at the other process) means a rebooted host: everything is asked again.
  expect((await call('POST', `${bBase}/infra-envs/${ie.id}/hosts`, { body: { host_id: h1 } })).status).toBe(201);
  await settled();
  expect(await types(a.base)).toEqual(expect.arrayContaining(['inventory', 'connectivity-check']));
});

it('hands an install step out again only while its host has reported no stage (the answer that carried it was lost)', async () => {
  const c = (await call('POST', `${a.base}/clusters`, { body: { name: 'once', openshift_version: '1.31', pull_secret: PULL_SECRET } })).body;
  const ie = (await call('POST', `${a.base}/infra-envs`, { body: { name: 'once-ie', pull_secret: PULL_SECRET, cluster_id: c.id } })).body;
  const id = randomUUID();
  expect((await call('POST', `${a.base}/infra-envs/${ie.id}/hosts`, { body: { host_id: id } })).status).toBe(201);
  const longAgo = new Date(Date.now() - 11 * 60_000);
  for (const [step_id, step_type] of [['install-a1', 'install'], ['logs-gather-x', 'logs-gather']]) {
    await a.db('host_steps').insert({ infra_env_id: ie.id, host_id: id, step_id, step_type, args: JSON.stringify(['{}']), state: 'sent', sent_at: longAgo });
  }
  const poll = async () => ((await call('GET', `${bBase}/infra-envs/${ie.id}/hosts/${id}/instructions`)).body.instructions as Array<{ step_id: string }>).map((s) => s.step_id);
  // No stage reported since it went out: it never arrived; both go out again.
  expect(await poll()).toEqual(expect.arrayContaining(['logs-gather-x', 'install-a1']));
  // Once the host reports a stage, the install step is known to have arrived: never sent again.
  await a.db('host_steps').where({ host_id: id }).update({ sent_at: longAgo });
  await a.db('hosts').where({ id }).update({ doc: a.db.raw(`doc || '{"progress": {"current_stage": "Installing"}}'::jsonb`) });
  const again = await poll();
  expect(again).toContain('logs-gather-x');
  expect(again).not.toContain('install-a1');
});

it('hands out the same peer list from every process as soon as a host joins (no process keeps an older one)', async () => {
  const c = (await call('POST', `${a.base}/clusters`, { body: { name: 'peers', openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com' } })).body;
  const ie = (await call('POST', `${a.base}/infra-envs`, { body: { name: 'peers-ie', pull_secret: PULL_SECRET, cluster_id: c.id } })).body;
  const [h1, h2, h3] = [randomUUID(), randomUUID(), randomUUID()];
  const join = async (base: string, id: string, n: number) => {
    expect((await call('POST', `${base}/infra-envs/${ie.id}/hosts`, { body: { host_id: id } })).status).toBe(201);
    expect((await call('POST', `${base}/infra-envs/${ie.id}/hosts/${id}/instructions`, { body: { step_type: 'inventory', step_id: `inventory-${n}`, output: smallInventory(`p${n}`, `10.9.1.${n}`) } })).status).toBe(204);
  };
  await join(a.base, h1, 21);
  await join(a.base, h2, 22);
  // The peer list follows the refresh of the cluster, which runs off the agents' requests; a person's read settles it.
  const settled = async () => expect((await call('GET', `${bBase}/clusters/${c.id}`)).status).toBe(200);
  await settled();
  const peersOf = async (base: string) => {
    const step = ((await call('GET', `${base}/infra-envs/${ie.id}/hosts/${h1}/instructions`)).body.instructions as Array<{ step_type: string; args: string[] }>).find((s) => s.step_type === 'connectivity-check');
    return step ? step.args.join(' ') : undefined;
  };
  // Process A hands out the peer list it now knows (and keeps it).
  expect(await peersOf(a.base)).toContain('10.9.1.22');
  // A third host joins through process B; once its cluster is refreshed, A's next answer names it (its kept list was checked, not trusted).
  await join(bBase, h3, 23);
  await settled();
  const next = await peersOf(a.base);
  expect(next).toContain('10.9.1.23');
  expect(next).toContain('10.9.1.22');
});

it('hands the connectivity check out again when a peer\'s address changed, at either process, and not when only its memory did', async () => {
  const c = (await call('POST', `${a.base}/clusters`, { body: { name: 'peers', openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com' } })).body;
  const ie = (await call('POST', `${a.base}/infra-envs`, { body: { name: 'peers-ie', pull_secret: PULL_SECRET, cluster_id: c.id } })).body;
  const [h1, h2] = [randomUUID(), randomUUID()];
  const report = async (id: string, n: number, ip: string, memGiB = 32) => {
    expect((await call('POST', `${a.base}/infra-envs/${ie.id}/hosts/${id}/instructions`, { body: { step_type: 'inventory', step_id: `inventory-${n}-${ip}-${memGiB}`, output: smallInventory(`h${n}`, ip, memGiB) } })).status).toBe(204);
  };
  for (const [id, n] of [[h1, 21], [h2, 22]] as const) {
    expect((await call('POST', `${a.base}/infra-envs/${ie.id}/hosts`, { body: { host_id: id } })).status).toBe(201);
    await report(id, n, `10.9.1.${n}`);
  }
  const settled = async () => expect((await call('GET', `${a.base}/clusters/${c.id}`)).status).toBe(200);
  const connectivity = async (base: string) => ((await call('GET', `${base}/infra-envs/${ie.id}/hosts/${h1}/instructions`)).body.instructions as Array<{ step_type: string; args: string[] }>).find((s) => s.step_type === 'connectivity-check');
  await settled();
  expect(JSON.parse((await connectivity(a.base))!.args[0]!)[0].nics[0].ip_addresses).toEqual(['10.9.1.22']);
  // The peer's memory changed: the peer list did not, so nothing goes out again.
  await report(h2, 22, '10.9.1.22', 64);
  await settled();
  expect(await connectivity(bBase)).toBeUndefined();
  // Its address changed: the new list goes out at once, from the other process too.
  await report(h2, 22, '10.9.1.122', 64);
  await settled();
  expect(JSON.parse((await connectivity(bBase))!.args[0]!)[0].nics[0].ip_addresses).toEqual(['10.9.1.122']);
});

it('keeps the repeat cadence per host of an infra-env: the same host id in another infra-env is asked on its own clock (fuzzing found it keyed by host id alone)', async () => {
  // Host ids are the agent's (the machine's UUID): the same machines booted with two tenants' images are two
  // pairs of hosts with the same ids and inventories, so the same step arguments.
  const [h1, h2] = [randomUUID(), randomUUID()];
  const envs: Array<{ cluster: string; ie: string }> = [];
  for (const n of [1, 2]) {
    const c = (await call('POST', `${a.base}/clusters`, { body: { name: `same-ids-${n}`, openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com' } })).body;
    const ie = (await call('POST', `${a.base}/infra-envs`, { body: { name: `same-ids-ie-${n}`, pull_secret: PULL_SECRET, cluster_id: c.id } })).body;
    for (const [id, m] of [[h1, 11], [h2, 12]] as const) {
      expect((await call('POST', `${a.base}/infra-envs/${ie.id}/hosts`, { body: { host_id: id } })).status).toBe(201);
      expect((await call('POST', `${a.base}/infra-envs/${ie.id}/hosts/${id}/instructions`, { body: { step_type: 'inventory', step_id: `inventory-${n}-${m}`, output: smallInventory(`same-${m}`, `10.9.31.${m}`) } })).status).toBe(204);
    }
    expect((await call('GET', `${a.base}/clusters/${c.id}`)).status).toBe(200);
    envs.push({ cluster: c.id, ie: ie.id });
  }
  const types = async (base: string, ie: string) => ((await call('GET', `${base}/infra-envs/${ie}/hosts/${h1}/instructions`)).body.instructions as Array<{ step_type: string }>).map((s) => s.step_type);
  expect(await types(a.base, envs[0]!.ie)).toContain('connectivity-check');
  expect(await types(bBase, envs[0]!.ie)).not.toContain('connectivity-check');
  // The first infra-env's host was just asked; this one never was.
  expect(await types(bBase, envs[1]!.ie)).toContain('connectivity-check');
  expect(await types(a.base, envs[1]!.ie)).not.toContain('connectivity-check');
});
