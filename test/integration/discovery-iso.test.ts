import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import express from 'express';
import { toolsDir } from '../../src/dev/process-utils';
import { imageRoutes } from '../../src/api/image-routes';
import { errorHandler } from '../../src/api/errors';
import { createLogger } from '../../src/logger';
import type { ServiceContext } from '../../src/services/context';
import { ImageUrlSigner } from '../../src/auth/image-url-signer';
import { BaseImages } from '../../src/images/base-images';
import { DEFAULT_RELEASES } from '../../src/domain/releases';
import { call, PULL_SECRET, SSH_KEY, startApiHarness, type ApiHarness } from '../support/api-harness';
import { buildSyntheticLiveIso, DEFAULT_KARGS, xorrisoAvailable, type SyntheticIso } from '../support/live-iso';
import { tempDir } from '../support/services';

/**
 * The discovery ISO: the base live ISO streamed with the infra-env's Ignition
 * in its embed area (and, minimal, kernel arguments that fetch the rootfs from
 * Landfall), read back by the real coreos-installer.
 */
const coreosInstaller = path.join(toolsDir(), 'cargo', 'bin', 'coreos-installer');
const haveXorriso = xorrisoAvailable();
if (!haveXorriso) console.warn('discovery-iso tests skipped: xorriso is missing (scripts/install-system-tools.sh installs it as root)');
const d = haveXorriso ? describe : describe.skip;

let h: ApiHarness;
let small: SyntheticIso;
let big: SyntheticIso;
let work: string;
let fullIe: string;
let minimalIe: string;
const admin = () => ({ Authorization: `Bearer ${h.signer.sign({ use: 'user', sub: 'root', admin: true })}` });
const IMAGE_URL_SECRET = 'discovery-iso-test-image-url-secret-0123456789';
const urlSigner = new ImageUrlSigner(Buffer.from(IMAGE_URL_SECRET));
/** A presigned-URL token as the service makes them (the test configures the same secret). */
const imageToken = (id: string, ttlSeconds = 600, nowMs = Date.now(), version = 0) => urlSigner.sign({ infraEnvId: id, version, expiresAt: Math.floor(nowMs / 1000) + ttlSeconds });

function ci(...args: string[]): string {
  if (!existsSync(coreosInstaller)) throw new Error(`coreos-installer not installed at ${coreosInstaller}; run "bash scripts/install-coreos-installer.sh" (npm test does)`);
  return execFileSync(coreosInstaller, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

async function download(url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const r = await fetch(url, { method, headers });
  return { status: r.status, headers: r.headers, body: Buffer.from(await r.arrayBuffer()) };
}

/** discovery.ign with the agent token replaced. */
const withoutToken = (ign: string) => ign.replace(/LANDFALL_AGENT_TOKEN%3D[A-Za-z0-9_.-]+/, 'LANDFALL_AGENT_TOKEN%3D<token>');

d('discovery ISO', () => {
  beforeAll(async () => {
    small = await buildSyntheticLiveIso({ fillerBytes: 2 * 1024 * 1024, name: 'small.iso' });
    work = tempDir('iso-downloads');
    h = await startApiHarness({ authType: 'local', env: { BASE_ISO_PATH: small.path, IMAGE_URL_SECRET } });
    const mk = async (name: string, type: string) =>
      (await call('POST', `${h.base}/infra-envs`, { headers: admin(), body: { name, pull_secret: PULL_SECRET, ssh_authorized_key: SSH_KEY, image_type: type, additional_ntp_sources: 'ntp.example.com' } })).body.id as string;
    fullIe = await mk('iso-full', 'full-iso');
    minimalIe = await mk('iso-minimal', 'minimal-iso');
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('retires image URLs made before the infra-env changed; the next URL carries the change', async () => {
    const ie = (await call('POST', `${h.base}/infra-envs`, { headers: admin(), body: { name: 'iso-change', pull_secret: PULL_SECRET, image_type: 'full-iso' } })).body.id as string;
    const before = (await call('GET', `${h.base}/infra-envs/${ie}/downloads/image-url`, { headers: admin() })).body.url as string;
    expect((await download(before, {}, 'HEAD')).status).toBe(200);
    const patched = await call('PATCH', `${h.base}/infra-envs/${ie}`, { headers: admin(), body: { additional_ntp_sources: 'ntp2.example.com' } });
    expect(patched.status).toBe(201);
    const old = await download(before, {}, 'HEAD');
    expect(old.status).toBe(404);
    const after = (await call('GET', `${h.base}/infra-envs/${ie}/downloads/image-url`, { headers: admin() })).body.url as string;
    const iso = await download(after);
    expect(iso.status).toBe(200);
    const file = path.join(work, 'after-change.iso');
    writeFileSync(file, iso.body);
    expect(ci('iso', 'ignition', 'show', file)).toContain('ntp2.example.com');
  });

  it('shows a working download_url on every read: made at creation, replaced by an update, renewed once half its life is gone', async () => {
    const created = await call('POST', `${h.base}/infra-envs`, { headers: admin(), body: { name: 'iso-url', pull_secret: PULL_SECRET, image_type: 'full-iso' } });
    const ie = created.body.id as string;
    const first = created.body.download_url as string;
    expect(first.startsWith(`${h.url}/images/${ie}/full.iso?image_token=`)).toBe(true);
    expect(Date.parse(created.body.expires_at)).toBeGreaterThan(Date.now() + 3600_000);
    // Reads, single and listed, show that URL while it has most of its life left.
    expect((await call('GET', `${h.base}/infra-envs/${ie}`, { headers: admin() })).body.download_url).toBe(first);
    expect((await call('GET', `${h.base}/infra-envs`, { headers: admin() })).body.find((x: { id: string }) => x.id === ie).download_url).toBe(first);
    expect((await download(first, {}, 'HEAD')).status).toBe(200);
    // An update makes the image anew: the answer carries a URL for it, and the old URL is retired.
    const patched = await call('PATCH', `${h.base}/infra-envs/${ie}`, { headers: admin(), body: { image_type: 'minimal-iso' } });
    const second = patched.body.download_url as string;
    expect(second.startsWith(`${h.url}/images/${ie}/minimal.iso?image_token=`)).toBe(true);
    expect((await download(first, {}, 'HEAD')).status).toBe(404);
    expect((await download(second, {}, 'HEAD')).status).toBe(200);
    expect((await call('GET', `${h.base}/infra-envs/${ie}`, { headers: admin() })).body.download_url).toBe(second);
    // With less than half its lifetime (4 h by default) left, a read replaces it with a fresh one.
    await h.db('infra_envs').where({ id: ie }).update({ doc: h.db.raw("doc || jsonb_build_object('expires_at', ?::text)", [new Date(Date.now() + 60_000).toISOString()]) });
    const renewed = (await call('GET', `${h.base}/infra-envs/${ie}`, { headers: admin() })).body;
    // (The URL itself may come out the same: a token is made of the expiry in whole seconds and the image version.)
    expect(Date.parse(renewed.expires_at)).toBeGreaterThan(Date.now() + 3600_000);
    expect((await download(renewed.download_url, {}, 'HEAD')).status).toBe(200);
    expect((await h.db('infra_envs').where({ id: ie }).first()).doc.expires_at).toBe(renewed.expires_at);
  });

  it('serves an iPXE script whose kernel, initrd, rootfs and Ignition URLs all work, and only for their infra-env', async () => {
    const r = await call('GET', `${h.base}/infra-envs/${minimalIe}/downloads/files?file_name=ipxe-script`, { headers: admin() });
    expect(r.status).toBe(200);
    expect(r.text.startsWith('#!ipxe\n')).toBe(true);
    const urls = [...r.text.matchAll(/https?:\/\/\S+/g)].map((m) => m[0]);
    const byName = (n: string) => urls.find((u) => new URL(u).pathname.endsWith(`/${n}`))!;
    for (const n of ['initrd.img', 'vmlinuz', 'rootfs.img', 'discovery.ign']) {
      const got = await download(byName(n));
      expect([n, got.status, got.status === 200 ? '' : got.body.toString()]).toEqual([n, 200, '']);
    }
    expect(r.text).toMatch(/kernel \S+\/vmlinuz\S* initrd=initrd coreos\.live\.rootfs_url=\S+\/rootfs\.img\S* .*ignition\.config\.url=\S+\/discovery\.ign/);
    const rootfs = await download(byName('rootfs.img'));
    expect(rootfs.body.length).toBe(2 * 1024 * 1024);
    const part = await download(byName('rootfs.img'), { Range: 'bytes=1000-1999' });
    expect(part.status).toBe(206);
    expect(part.body.equals(rootfs.body.subarray(1000, 2000))).toBe(true);
    expect((await download(byName('vmlinuz'))).body.toString()).toContain('landfall synthetic kernel');
    expect(JSON.parse((await download(byName('discovery.ign'))).body.toString()).ignition.version).toBe('3.4.0');
    // The Ignition's token does not open another infra-env's; the boot artifacts are the release's and need none.
    const foreign = byName('discovery.ign').replace(minimalIe, fullIe);
    expect((await download(foreign)).status).toBe(404);
    expect(new URL(byName('rootfs.img')).pathname).toBe('/images/boot-artifacts/1.32/x86_64/rootfs.img');
    expect((await download(`${h.url}/images/boot-artifacts/9.99/x86_64/rootfs.img`)).status).toBe(404);
    expect((await download(`${h.url}/images/boot-artifacts/1.32/s390x/rootfs.img`)).status).toBe(404);
    // Short enough for a BMC's URL field.
    for (const u of urls) expect(u.length).toBeLessThan(160);
  });

  it('embeds exactly the discovery Ignition into the full ISO, as coreos-installer reads it', async () => {
    const u = await call('GET', `${h.base}/infra-envs/${fullIe}/downloads/image-url`, { headers: admin() });
    expect(u.status).toBe(200);
    expect(u.body.url).toMatch(new RegExp(`/images/${fullIe}/full\\.iso\\?image_token=`));
    const iso = await download(u.body.url);
    expect(iso.status).toBe(200);
    expect(iso.headers.get('content-length')).toBe(String(small.size));
    expect(iso.headers.get('accept-ranges')).toBe('bytes');
    expect(iso.body.length).toBe(small.size);
    const file = path.join(work, 'full.iso');
    writeFileSync(file, iso.body);

    const embedded = ci('iso', 'ignition', 'show', file);
    const api = await call('GET', `${h.base}/infra-envs/${fullIe}/downloads/files?file_name=discovery.ign`, { headers: admin() });
    expect(api.status).toBe(200);
    // Byte for byte, agent token included: it is minted once per infra-env, so every download and every API process embeds the same.
    expect(embedded).toBe(api.text);
    expect(embedded).not.toBe(withoutToken(embedded));
    const token = decodeURIComponent(/LANDFALL_AGENT_TOKEN%3D([A-Za-z0-9_.-]+)/.exec(embedded)![1]!);
    expect(h.signer.verify(token)).toMatchObject({ use: 'agent', infra_env_id: fullIe });
    // The full ISO keeps the image's own kernel arguments.
    expect(ci('iso', 'kargs', 'show', file).trim()).toBe(DEFAULT_KARGS);

    // Outside the embed area, the image is the base image.
    const base = readFileSync(small.path);
    const { offset, length } = small.ignition;
    expect(iso.body.subarray(0, offset).equals(base.subarray(0, offset))).toBe(true);
    expect(iso.body.subarray(offset + length).equals(base.subarray(offset + length))).toBe(true);
    // Inside: a gzip'd newc cpio with config.ign, zero padding after it.
    const cpio = gunzipSync(iso.body.subarray(offset, offset + length));
    expect(cpio.subarray(0, 6).toString()).toBe('070701');
    expect(cpio.includes(Buffer.from('config.ign\0'))).toBe(true);
    expect(cpio.includes(Buffer.from('TRAILER!!!\0'))).toBe(true);
  });

  it('points the minimal ISO at a rootfs served by Landfall', async () => {
    const u = await call('GET', `${h.base}/infra-envs/${minimalIe}/downloads/image-url`, { headers: admin() });
    expect(u.body.url).toMatch(new RegExp(`/images/${minimalIe}/minimal\\.iso\\?image_token=`));
    const iso = await download(u.body.url);
    expect(iso.status).toBe(200);
    const file = path.join(work, 'minimal.iso');
    writeFileSync(file, iso.body);
    const kargs = ci('iso', 'kargs', 'show', file).trim();
    expect(kargs).toBe(`mitigations=auto,nosmt ignition.firstboot ignition.platform.id=metal coreos.live.rootfs_url=${h.url}/images/boot-artifacts/1.32/x86_64/rootfs.img`);
    expect(ci('iso', 'kargs', 'show', '--default', file).trim()).toBe(DEFAULT_KARGS);
    const embedded = ci('iso', 'ignition', 'show', file);
    const api = await call('GET', `${h.base}/infra-envs/${minimalIe}/downloads/files?file_name=discovery.ign`, { headers: admin() });
    expect(embedded).toBe(api.text);
  });

  it("applies the infra-env's kernel_arguments to both ISOs and the iPXE kernel line; refuses the ones the image depends on", async () => {
    const mk = async (name: string, type: string, kernel_arguments: unknown) => call('POST', `${h.base}/infra-envs`, { headers: admin(), body: { name, pull_secret: PULL_SECRET, image_type: type, kernel_arguments } });
    const full = await mk('kargs-full', 'full-iso', [{ operation: 'delete', value: 'mitigations' }, { operation: 'append', value: 'rd.net.timeout.carrier=60' }]);
    expect(full.status).toBe(201);
    const fullIso = await download((await call('GET', `${h.base}/infra-envs/${full.body.id}/downloads/image-url`, { headers: admin() })).body.url);
    writeFileSync(path.join(work, 'kargs-full.iso'), fullIso.body);
    expect(ci('iso', 'kargs', 'show', path.join(work, 'kargs-full.iso')).trim()).toBe('coreos.liveiso=landfall-test-live ignition.firstboot ignition.platform.id=metal rd.net.timeout.carrier=60');

    const minimal = await mk('kargs-minimal', 'minimal-iso', [{ operation: 'replace', value: 'mitigations=off' }, { operation: 'append', value: 'console=ttyS0,115200n8' }]);
    const minIso = await download((await call('GET', `${h.base}/infra-envs/${minimal.body.id}/downloads/image-url`, { headers: admin() })).body.url);
    writeFileSync(path.join(work, 'kargs-minimal.iso'), minIso.body);
    expect(ci('iso', 'kargs', 'show', path.join(work, 'kargs-minimal.iso')).trim()).toBe(
      `mitigations=off ignition.firstboot ignition.platform.id=metal coreos.live.rootfs_url=${h.url}/images/boot-artifacts/1.32/x86_64/rootfs.img console=ttyS0,115200n8`,
    );
    const ipxe = await call('GET', `${h.base}/infra-envs/${minimal.body.id}/downloads/files?file_name=ipxe-script`, { headers: admin() });
    expect(ipxe.text).toMatch(/^kernel \S+ initrd=initrd coreos\.live\.rootfs_url=\S+ ignition\.firstboot ignition\.platform\.id=metal ignition\.config\.url=\S+ mitigations=off console=ttyS0,115200n8$/m);

    const reserved = await mk('kargs-bad', 'full-iso', [{ operation: 'append', value: 'ignition.config.url=http://elsewhere/x.ign' }]);
    expect(reserved.status).toBe(400);
    expect(reserved.body.reason).toMatch(/kernel_arguments\[0\]: ignition\.config\.url is set by Landfall/);
    const patched = await call('PATCH', `${h.base}/infra-envs/${full.body.id}`, { headers: admin(), body: { kernel_arguments: [{ operation: 'replace', value: 'nosplit' }] } });
    expect(patched.status).toBe(400);
    // The refused change left the stored arguments as they were.
    // (The wire carries them as a JSON string, as AS does.)
    expect(JSON.parse((await call('GET', `${h.base}/infra-envs/${full.body.id}`, { headers: admin() })).body.kernel_arguments)).toEqual([{ operation: 'delete', value: 'mitigations' }, { operation: 'append', value: 'rd.net.timeout.carrier=60' }]);
  });

  it('hands out short presigned URLs that expire when expires_at says', async () => {
    const before = Date.now();
    const u = await call('GET', `${h.base}/infra-envs/${fullIe}/downloads/image-url`, { headers: admin() });
    const expiresAt = Date.parse(u.body.expires_at);
    // IMAGE_URL_TTL_SECONDS defaults to 4 hours.
    expect(expiresAt).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 4 * 3600_000 - 1000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 4 * 3600_000);
    const token = new URL(u.body.url).searchParams.get('image_token')!;
    expect(urlSigner.verify(token, fullIe, expiresAt - 1000)).toMatchObject({ infraEnvId: fullIe, expiresAt: expiresAt / 1000 });
    expect(urlSigner.verify(token, fullIe, expiresAt)).toBeUndefined();
    expect(u.body.url.length).toBeLessThan(130);
  });

  it('answers HEAD, single ranges (straddling the embed area) and unsatisfiable ranges', async () => {
    const url = `${h.url}/images/${fullIe}/full.iso?image_token=${imageToken(fullIe)}`;
    const head = await download(url, {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(small.size));
    expect(head.headers.get('accept-ranges')).toBe('bytes');
    expect(head.body.length).toBe(0);

    const whole = await download(url);
    expect(whole.status).toBe(200);
    const { offset, length } = small.ignition;
    const ranges: Array<[string, number, number]> = [
      [`bytes=${offset - 1000}-${offset + 999}`, offset - 1000, offset + 999],
      [`bytes=${offset + length - 10}-${offset + length + 5000}`, offset + length - 10, offset + length + 5000],
      [`bytes=${offset - 5}-${offset + length + 5}`, offset - 5, offset + length + 5],
      [`bytes=${small.size - 100}-`, small.size - 100, small.size - 1],
      ['bytes=-300', small.size - 300, small.size - 1],
      [`bytes=0-${small.size + 1000}`, 0, small.size - 1],
    ];
    for (const [range, start, end] of ranges) {
      const r = await download(url, { Range: range });
      expect([range, r.status]).toEqual([range, 206]);
      expect(r.headers.get('content-range')).toBe(`bytes ${start}-${end}/${small.size}`);
      expect(r.body.equals(whole.body.subarray(start, end + 1))).toBe(true);
    }
    // A HEAD with a range tells the length of the part.
    const headRange = await download(url, { Range: `bytes=${offset}-${offset + 9}` }, 'HEAD');
    expect([headRange.status, headRange.headers.get('content-length')]).toEqual([206, '10']);

    const past = await download(url, { Range: `bytes=${small.size}-` });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe(`bytes */${small.size}`);
    // Several ranges at once: the whole image (a server may ignore Range).
    expect((await download(url, { Range: 'bytes=0-1,5-6' })).status).toBe(200);
    // If-Range with a stale validator: the whole image again.
    const etag = whole.headers.get('etag')!;
    expect((await download(url, { Range: 'bytes=0-9', 'If-Range': etag })).status).toBe(206);
    expect((await download(url, { Range: 'bytes=0-9', 'If-Range': '"stale"' })).status).toBe(200);
  });

  it('answers a bad, expired or foreign token exactly like an unknown infra-env (404)', async () => {
    const unknown = randomUUID();
    const missing = await call('GET', `${h.url}/images/${unknown}/full.iso?image_token=${imageToken(unknown)}`);
    expect(missing.status).toBe(404);
    const shape = (body: unknown, id: string) => JSON.parse(JSON.stringify(body).split(id).join('<id>'));
    const expected = shape(missing.body, unknown);
    expect(expected).toEqual({ kind: 'Error', id: 404, href: '', code: '404', reason: 'infra-env <id> not found' });

    const [, version, mac] = imageToken(fullIe).split('.');
    const cases: Record<string, string> = {
      none: '',
      garbage: '?image_token=not-a-token',
      // A later expiry with the MAC of the real token.
      forged: `?image_token=${(Math.floor(Date.now() / 1000) + 10 * 365 * 86400).toString(36)}.${version}.${mac}`,
      otherKey: `?image_token=${new ImageUrlSigner(Buffer.alloc(32, 7)).sign({ infraEnvId: fullIe, version: 0, expiresAt: Math.floor(Date.now() / 1000) + 600 })}`,
      expired: `?image_token=${imageToken(fullIe, 60, Date.now() - 3600_000)}`,
      foreign: `?image_token=${imageToken(minimalIe)}`,
      oldVersion: `?image_token=${imageToken(fullIe, 600, Date.now(), 7)}`,
      jwt: `?image_token=${h.signer.sign({ use: 'image', infra_env_id: fullIe }, 600)}`,
    };
    for (const [what, q] of Object.entries(cases)) {
      for (const ie of [fullIe, unknown]) {
        const r = await call('GET', `${h.url}/images/${ie}/full.iso${q}`);
        expect([what, r.status, shape(r.body, ie)]).toEqual([what, 404, expected]);
      }
    }
    expect((await call('GET', `${h.url}/images/${fullIe}/other.iso?image_token=${imageToken(fullIe)}`)).status).toBe(404);
  });

  it('answers 404 naming the missing configuration when no base image is configured', async () => {
    const app = express();
    const id = randomUUID();
    const services = {
      baseUrl: 'http://x',
      now: () => new Date(),
      imageUrlSigner: async () => urlSigner,
      repos: { infraEnvs: { get: async (x: string) => (x === id ? { id, doc: { openshift_version: '1.31', cpu_architecture: 'x86_64' } } : undefined) } },
      baseImages: new BaseImages({ releases: DEFAULT_RELEASES, store: undefined as never, cacheDir: tempDir('no-cache'), fallbackPath: undefined }),
    };
    app.use(imageRoutes({ services: services as unknown as ServiceContext }));
    app.use(errorHandler(createLogger({ log: { level: 'silent', format: 'json' } }, 'test')));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const r = await call('GET', `http://127.0.0.1:${(server.address() as AddressInfo).port}/images/${id}/full.iso?image_token=${imageToken(id)}`);
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ kind: 'Error', id: 404, href: '', code: '404', reason: expect.stringMatching(/no base image is configured for release 1\.31 on x86_64.*base_images.*BASE_ISO_PATH/) });
    } finally {
      server.close();
    }
  });

  it('streams a 64 MiB image in constant memory', async () => {
    big = await buildSyntheticLiveIso({ fillerBytes: 64 * 1024 * 1024, name: 'big.iso' });
    const h2 = await startApiHarness({ authType: 'none', env: { BASE_ISO_PATH: big.path } });
    try {
      const ie = (await call('POST', `${h2.base}/infra-envs`, { body: { name: 'big', pull_secret: PULL_SECRET } })).body.id as string;
      global.gc?.();
      const before = process.memoryUsage().rss;
      let peak = before;
      // AUTH_TYPE=none signs image URLs too (with the key kept in the database).
      const url = (await call('GET', `${h2.base}/infra-envs/${ie}/downloads/image-url`)).body.url as string;
      expect(url).toMatch(/\?image_token=[0-9a-z]+\.[0-9a-z]+\.[A-Za-z0-9_-]{22}$/);
      expect((await fetch(url.replace(/image_token=.*/, 'image_token=x'), { method: 'HEAD' })).status).toBe(404);
      const res = await fetch(url);
      expect(res.status).toBe(200);
      let received = 0;
      const reader = res.body!.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        received += value.length;
        peak = Math.max(peak, process.memoryUsage().rss);
      }
      expect(received).toBe(big.size);
      const grown = peak - before;
      console.log(`64 MiB discovery ISO download: RSS grew by ${(grown / 1048576).toFixed(1)} MiB`);
      // The image is 64 MiB; a buffered response would add at least that.
      expect(grown).toBeLessThan(24 * 1024 * 1024);
    } finally {
      await h2.stop();
    }
  });
});
