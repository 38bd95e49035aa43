import { randomUUID } from 'node:crypto';
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';

/**
 * AUTH_TYPE=local: users own what they create; an agent token acts for one
 * infra-env only; nothing of another tenant is ever answered with 200.
 */
let h: ApiHarness;
const user = (name: string, admin = false) => ({ Authorization: `Bearer ${h.signer.sign({ use: 'user', sub: name, ...(admin ? { admin: true } : {}) })}` });
const agent = (infraEnvId: string) => ({ 'X-Secret-Key': h.signer.sign({ use: 'agent', infra_env_id: infraEnvId }) });

let aCluster: string;
let aInfraEnv: string;
let bInfraEnv: string;
const aHost = randomUUID();

beforeAll(async () => {
  h = await startApiHarness({ authType: 'local' });
  aCluster = (await call('POST', `${h.base}/clusters`, { headers: user('alice'), body: { name: 'a', openshift_version: '1.31', pull_secret: PULL_SECRET } })).body.id;
  aInfraEnv = (await call('POST', `${h.base}/infra-envs`, { headers: user('alice'), body: { name: 'a-ie', pull_secret: PULL_SECRET, cluster_id: aCluster } })).body.id;
  bInfraEnv = (await call('POST', `${h.base}/infra-envs`, { headers: user('bob'), body: { name: 'b-ie', pull_secret: PULL_SECRET } })).body.id;
  expect((await call('POST', `${h.base}/infra-envs/${aInfraEnv}/hosts`, { headers: agent(aInfraEnv), body: { host_id: aHost } })).status).toBe(201);
});
afterAll(async () => {
  await h?.stop();
});

describe('AUTH_TYPE=local', () => {
  it('refuses calls without credentials or with a forged token (401, infra_error shape)', async () => {
    const none = await call('GET', `${h.base}/clusters`);
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ code: 401, message: expect.any(String) });
    const [head, , sig] = h.signer.sign({ use: 'user', sub: 'alice' }).split('.');
    const forged = `${head}.${Buffer.from(JSON.stringify({ use: 'user', sub: 'alice', admin: true })).toString('base64url')}.${sig}`;
    expect((await call('GET', `${h.base}/clusters`, { headers: { Authorization: `Bearer ${forged}` } })).status).toBe(401);
    const expired = h.signer.sign({ use: 'user', sub: 'alice' }, 1, Date.now() - 10000);
    expect((await call('GET', `${h.base}/clusters`, { headers: { Authorization: `Bearer ${expired}` } })).status).toBe(401);
  });

  it('refuses an anonymous or agent self-check (it writes a row and starts a workflow)', async () => {
    const before = Number((await h.db('self_checks').count('* as n'))[0]!.n);
    const anon = await call('POST', `${h.url}/api/landfall/v1/self-checks`, { body: {} });
    expect(anon.status).toBe(401);
    expect((await call('POST', `${h.url}/api/landfall/v1/self-checks`, { headers: agent(aInfraEnv), body: {} })).status).toBe(401);
    expect(Number((await h.db('self_checks').count('* as n'))[0]!.n)).toBe(before);
  });

  it('authenticates the streamed log routes by their own operations: agents upload, users or ?api_key download', async () => {
    const logsUrl = `${h.base}/clusters/${aCluster}/logs?logs_type=host&infra_env_id=${aInfraEnv}&host_id=${aHost}`;
    const form = () => {
      const f = new FormData();
      f.append('upfile', new Blob([Buffer.from('H4sIAAAAAAAAA+3BAQ0AAADCoPdPbQ43oAAAAAAAAAAAAIA3A5reHScAKAAA', 'base64')]), 'logs.tar.gz');
      return f;
    };
    const up = await fetch(logsUrl, { method: 'POST', headers: agent(aInfraEnv), body: form() });
    expect([up.status, await up.text()]).toEqual([204, '']);
    // The upload is an agent's operation: a user's token is not what it accepts.
    expect((await fetch(logsUrl, { method: 'POST', headers: user('alice'), body: form() })).status).toBe(401);
    expect((await fetch(logsUrl, { method: 'POST', body: form() })).status).toBe(401);
    // Download: the owner's token, or an agent token in ?api_key (urlAuth).
    const download = `${h.base}/clusters/${aCluster}/logs?logs_type=host&host_id=${aHost}`;
    expect((await fetch(download, { headers: user('alice') })).status).toBe(200);
    expect((await fetch(`${download}&api_key=${h.signer.sign({ use: 'agent', infra_env_id: aInfraEnv })}`)).status).toBe(200);
    expect((await fetch(download)).status).toBe(401);
    // The same token has the same rights in its header and in ?api_key: an agent token in X-Secret-Key
    // downloads what it downloads in ?api_key, and a user's token works in ?api_key as in Authorization.
    expect((await fetch(download, { headers: agent(aInfraEnv) })).status).toBe(200);
    expect((await fetch(`${download}&api_key=${h.signer.sign({ use: 'user', sub: 'alice' })}`)).status).toBe(200);
    expect((await fetch(`${download}&api_key=${h.signer.sign({ use: 'user', sub: 'bob' })}`)).status).toBe(404);
    expect((await fetch(`${download}&api_key=${h.signer.sign({ use: 'agent', infra_env_id: bInfraEnv })}`)).status).toBe(404);
    // Bad input on these routes is a 400 like anywhere else.
    const notUuid = await call('GET', `${h.base}/clusters/not-a-uuid/logs`, { headers: user('alice') });
    expect(notUuid.status).toBe(400);
    expect(notUuid.body.reason).toContain('cluster_id');
    const noBoundary = await fetch(logsUrl, { method: 'POST', headers: { ...agent(aInfraEnv), 'content-type': 'multipart/form-data' }, body: 'x' });
    expect(noBoundary.status).toBe(400);
  });

  it('checks the streamed log routes\' query as the validator checks every other route (found by fuzzing: a repeated logs_type was read as "all", host_id=null was a 500)', async () => {
    const base = `${h.base}/clusters/${aCluster}/logs`;
    const bad = async (method: string, query: string, field: string) => {
      const r = await fetch(`${base}?${query}`, { method, headers: method === 'GET' ? user('alice') : agent(aInfraEnv), body: method === 'GET' ? undefined : new FormData() });
      const body = (await r.json()) as { reason: string; details?: { field?: string } };
      expect([query, r.status, body.details?.field]).toEqual([query, 400, field]);
    };
    await bad('GET', 'logs_type=host&logs_type=host', 'logs_type');
    await bad('GET', 'logs_type=everything', 'logs_type');
    await bad('GET', 'host_id=null', 'host_id');
    await bad('GET', 'verbose=true', 'verbose');
    await bad('POST', `logs_type=host&infra_env_id=${aInfraEnv}&host_id=null`, 'host_id');
    await bad('POST', `infra_env_id=${aInfraEnv}&host_id=${aHost}`, 'logs_type');
  });

  it('answers the version, operator and manifest-download calls aicli makes to users only; a manifest of another user is not found', async () => {
    for (const path of ['component-versions', 'supported-operators']) {
      expect([path, (await call('GET', `${h.base}/${path}`)).status]).toEqual([path, 401]);
      expect([path, (await call('GET', `${h.base}/${path}`, { headers: agent(aInfraEnv) })).status]).toEqual([path, 401]);
      expect([path, (await call('GET', `${h.base}/${path}`, { headers: user('bob') })).status]).toEqual([path, 200]);
    }
    const content = Buffer.from('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: auth\n').toString('base64');
    expect((await call('POST', `${h.base}/clusters/${aCluster}/manifests`, { headers: user('alice'), body: { file_name: 'auth.yaml', content } })).status).toBe(201);
    const file = `${h.base}/clusters/${aCluster}/manifests/files?file_name=auth.yaml`;
    expect((await call('GET', file, { headers: user('alice') })).text).toBe(Buffer.from(content, 'base64').toString());
    expect((await call('GET', file)).status).toBe(401);
    expect((await call('GET', file, { headers: agent(aInfraEnv) })).status).toBe(401);
    expect((await call('GET', file, { headers: user('bob') })).status).toBe(404);
    expect((await call('DELETE', `${h.base}/clusters/${aCluster}/manifests?file_name=auth.yaml`, { headers: user('alice') })).status).toBe(200);
  });

  it('shows users only what they own', async () => {
    const bob = await call('GET', `${h.base}/clusters`, { headers: user('bob') });
    expect(bob.status).toBe(200);
    expect(bob.body).toEqual([]);
    for (const [m, u] of [
      ['GET', `${h.base}/clusters/${aCluster}`],
      ['PATCH', `${h.base}/clusters/${aCluster}`],
      ['DELETE', `${h.base}/clusters/${aCluster}`],
      ['GET', `${h.base}/infra-envs/${aInfraEnv}`],
      ['GET', `${h.base}/infra-envs/${aInfraEnv}/hosts`],
      ['GET', `${h.base}/infra-envs/${aInfraEnv}/hosts/${aHost}`],
      ['GET', `${h.base}/events?cluster_id=${aCluster}`],
      ['GET', `${h.base}/infra-envs/${aInfraEnv}/downloads/image-url`],
    ] as const) {
      const r = await call(m, u, { headers: user('bob'), ...(m === 'PATCH' ? { body: { name: 'stolen' } } : {}) });
      expect([m, u, r.status]).toEqual([m, u, 404]);
    }
    // Bob cannot bind his infra-env to Alice's cluster either.
    const bind = await call('POST', `${h.base}/infra-envs`, { headers: user('bob'), body: { name: 'x', pull_secret: PULL_SECRET, cluster_id: aCluster } });
    expect(bind.status).toBe(404);
    // Alice's cluster is untouched.
    const mine = await call('GET', `${h.base}/clusters/${aCluster}`, { headers: user('alice') });
    expect(mine.body.name).toBe('a');
    // An administrator sees everything.
    expect((await call('GET', `${h.base}/clusters`, { headers: user('root', true) })).body).toHaveLength(1);
  });

  it('scopes agent tokens to one infra-env', async () => {
    const own = await call('GET', `${h.base}/infra-envs/${aInfraEnv}/hosts/${aHost}/instructions`, { headers: agent(aInfraEnv) });
    expect(own.status).toBe(200);
    for (const [m, u, body] of [
      ['GET', `${h.base}/infra-envs/${aInfraEnv}/hosts/${aHost}/instructions`, undefined],
      ['POST', `${h.base}/infra-envs/${aInfraEnv}/hosts`, { host_id: randomUUID() }],
      ['POST', `${h.base}/infra-envs/${aInfraEnv}/hosts/${aHost}/instructions`, { step_type: 'inventory', step_id: 'x', exit_code: 0, output: '{"hostname":"evil"}' }],
    ] as const) {
      const r = await call(m, u, { headers: agent(bInfraEnv), ...(body ? { body } : {}) });
      expect([m, u, r.status]).toEqual([m, u, 404]);
    }
    // An agent may post events about its own infra-env's hosts only.
    const bHost = randomUUID();
    expect((await call('POST', `${h.base}/infra-envs/${bInfraEnv}/hosts`, { headers: agent(bInfraEnv), body: { host_id: bHost } })).status).toBe(201);
    const event = (host: string) => ({ infra_env_id: aInfraEnv, host_id: host, severity: 'info', message: 'hello', event_time: new Date().toISOString() });
    expect((await call('POST', `${h.base}/events`, { headers: agent(aInfraEnv), body: event(aHost) })).status).toBe(201);
    expect((await call('POST', `${h.base}/events`, { headers: agent(aInfraEnv), body: event(bHost) })).status).toBe(404);
    expect((await h.db('events').where({ host_id: bHost, message: 'hello' })).length).toBe(0);
    // Agent tokens are not user tokens.
    expect((await call('GET', `${h.base}/clusters`, { headers: { Authorization: `Bearer ${h.signer.sign({ use: 'agent', infra_env_id: aInfraEnv })}` } })).status).toBe(401);
    // Nothing was written by the foreign agent.
    const host = await call('GET', `${h.base}/infra-envs/${aInfraEnv}/hosts/${aHost}`, { headers: user('alice') });
    expect(host.body.inventory).toBeUndefined();
  });

  it('embeds an agent token scoped to its infra-env in discovery.ign', async () => {
    const r = await call('GET', `${h.base}/infra-envs/${aInfraEnv}/downloads/files?file_name=discovery.ign`, { headers: user('alice') });
    expect(r.status).toBe(200);
    const env = decodeURIComponent(r.body.storage.files.find((f: { path: string }) => f.path === '/etc/landfall/agent.env').contents.source.slice('data:,'.length));
    const token = /LANDFALL_AGENT_TOKEN=(\S+)/.exec(env)![1]!;
    expect((await call('GET', `${h.base}/infra-envs/${aInfraEnv}/hosts/${aHost}/instructions`, { headers: { 'X-Secret-Key': token } })).status).toBe(200);
    expect((await call('GET', `${h.base}/infra-envs/${bInfraEnv}/hosts`, { headers: { 'X-Secret-Key': token } })).status).not.toBe(200);
    // Bob cannot download Alice's discovery image config.
    expect((await call('GET', `${h.base}/infra-envs/${aInfraEnv}/downloads/files?file_name=discovery.ign`, { headers: user('bob') })).status).toBe(404);
  });

  it('mints agent tokens that expire, and renews a polling agent\'s token past half its life', async () => {
    const r = await call('GET', `${h.base}/infra-envs/${aInfraEnv}/downloads/files?file_name=discovery.ign`, { headers: user('alice') });
    const env = decodeURIComponent(r.body.storage.files.find((f: { path: string }) => f.path === '/etc/landfall/agent.env').contents.source.slice('data:,'.length));
    const claims = h.signer.verify(/LANDFALL_AGENT_TOKEN=(\S+)/.exec(env)![1]!);
    // The default life: 30 days from the download.
    expect(claims.exp! - claims.iat!).toBe(30 * 24 * 3600);
    const poll = (token: string) => call('GET', `${h.base}/infra-envs/${aInfraEnv}/hosts/${aHost}/instructions`, { headers: { 'X-Secret-Key': token } });
    // Expired: refused, whatever its scope.
    const dead = h.signer.sign({ use: 'agent', infra_env_id: aInfraEnv }, 60, Date.now() - 120_000);
    const refused = await poll(dead);
    expect([refused.status, refused.body.message]).toEqual([401, 'token expired']);
    // Young: no renewal.
    const young = await poll(h.signer.sign({ use: 'agent', infra_env_id: aInfraEnv }, 30 * 24 * 3600));
    expect([young.status, young.headers.get('x-landfall-agent-token')]).toEqual([200, null]);
    // Past half its life: the answer carries a renewed token with the same scope and a full life.
    const old = h.signer.sign({ use: 'agent', infra_env_id: aInfraEnv }, 30 * 24 * 3600, Date.now() - 16 * 24 * 3600 * 1000);
    const renewedAnswer = await poll(old);
    expect(renewedAnswer.status).toBe(200);
    const renewed = renewedAnswer.headers.get('x-landfall-agent-token')!;
    const fresh = h.signer.verify(renewed);
    expect(fresh).toMatchObject({ use: 'agent', infra_env_id: aInfraEnv });
    expect(fresh.exp! - Date.now() / 1000).toBeGreaterThan(29 * 24 * 3600);
    expect((await poll(renewed)).status).toBe(200);
    expect((await call('GET', `${h.base}/infra-envs/${bInfraEnv}/hosts`, { headers: { 'X-Secret-Key': renewed } })).status).not.toBe(200);
    // A user's token is never renewed through this header.
    const u = await call('GET', `${h.base}/clusters`, { headers: { Authorization: `Bearer ${h.signer.sign({ use: 'user', sub: 'alice' }, 3600, Date.now() - 3000_000)}` } });
    expect([u.status, u.headers.get('x-landfall-agent-token')]).toEqual([200, null]);
  });

  it('accepts image tokens that open only their own infra-env', async () => {
    const u = await call('GET', `${h.base}/infra-envs/${aInfraEnv}/downloads/image-url`, { headers: user('alice') });
    expect(u.status).toBe(200);
    // The image URL's own token is a short HMAC (see discovery-iso.test.ts), not a credential for the REST API.
    const short = new URL(u.body.url).searchParams.get('image_token')!;
    expect([400, 401]).toContain((await call('GET', `${h.base}/infra-envs/${aInfraEnv}?image_token=${short}`)).status);
    const token = h.signer.sign({ use: 'image', infra_env_id: aInfraEnv }, 600);
    expect((await call('GET', `${h.base}/infra-envs/${aInfraEnv}?image_token=${token}`)).status).toBe(200);
    expect((await call('GET', `${h.base}/infra-envs/${bInfraEnv}?image_token=${token}`)).status).toBe(404);
    // Not an accepted credential there: the validator refuses the unknown parameter before auth runs.
    expect([400, 401]).toContain((await call('GET', `${h.base}/clusters/${aCluster}?image_token=${token}`)).status);
  });

  it('never returns or logs the pull secret', async () => {
    const r = await call('GET', `${h.base}/infra-envs/${aInfraEnv}`, { headers: user('alice') });
    expect(r.status).toBe(200);
    expect(r.body.pull_secret_set).toBe(true);
    expect(r.text).not.toContain('c2VjcmV0LXB1bGwtc2VjcmV0LXZhbHVl');
    expect(r.body.pull_secret).toBeUndefined();
  });
});
