/**
 * A discovery ISO download resumed on another API process (a Range request
 * after a dropped connection, behind a load balancer) must get the bytes of
 * the same image. Each process builds the embed area itself; with
 * AUTH_TYPE=local it carries an agent token, and an ECDSA signature differs
 * at every signing, so the token is minted once and kept in PostgreSQL.
 */
import { gunzipSync } from 'node:zlib';
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';
import { buildSyntheticLiveIso, xorrisoAvailable, type SyntheticIso } from '../support/live-iso';
import { useTestReplicas } from '../support/replicas';

const d = xorrisoAvailable() ? describe : describe.skip;
let h: ApiHarness;
let iso: SyntheticIso;

d('discovery image across two API processes', () => {
  beforeAll(async () => {
    useTestReplicas(2);
    iso = await buildSyntheticLiveIso({ fillerBytes: 2 * 1024 * 1024, name: 'replicas.iso' });
    h = await startApiHarness({ authType: 'local', env: { BASE_ISO_PATH: iso.path } });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('serves the same bytes, whole and by range, from either process', async () => {
    const admin = { Authorization: `Bearer ${h.signer.sign({ use: 'user', sub: 'root', admin: true })}` };
    const ie = (await call('POST', `${h.base}/infra-envs`, { headers: admin, body: { name: 'replicas', pull_secret: PULL_SECRET, image_type: 'full-iso' } })).body.id as string;
    const url = new URL((await call('GET', `${h.base}/infra-envs/${ie}/downloads/image-url`, { headers: admin })).body.url as string);
    const [a, b] = h.balancer!.targets();
    const get = async (origin: string, headers: Record<string, string> = {}) => {
      const r = await fetch(`${origin}${url.pathname}${url.search}`, { headers });
      return { status: r.status, etag: r.headers.get('etag'), body: Buffer.from(await r.arrayBuffer()) };
    };
    const fromA = await get(a!);
    const fromB = await get(b!);
    expect([fromA.status, fromB.status]).toEqual([200, 200]);
    expect(fromA.body.length).toBe(iso.size);
    expect(fromB.etag).toBe(fromA.etag);
    expect(fromB.body.equals(fromA.body)).toBe(true);
    // A download begun on one process and resumed on the other, across the embed area.
    const { offset, length } = iso.ignition;
    const part = await get(b!, { Range: `bytes=${offset - 100}-${offset + length + 100}`, 'If-Range': fromA.etag! });
    expect(part.status).toBe(206);
    expect(part.body.equals(fromA.body.subarray(offset - 100, offset + length + 101))).toBe(true);
    // And the discovery Ignition served as a file is the one in the image, token included.
    const ign = await call('GET', `${h.base}/infra-envs/${ie}/downloads/files?file_name=discovery.ign`, { headers: admin });
    expect(ign.status).toBe(200);
    const token = /LANDFALL_AGENT_TOKEN%3D([A-Za-z0-9_.-]+)/.exec(ign.text)![1]!;
    expect(gunzipSync(fromA.body.subarray(offset, offset + length)).includes(Buffer.from(token))).toBe(true);
  });
});
