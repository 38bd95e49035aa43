/**
 * The base-image catalogue: each release and architecture names its live ISO
 * by URL and sha256; the service fetches it once (however many downloads ask
 * at the same time), keeps it in object storage and on disk, and a second API
 * process with an empty disk cache takes it from storage instead of the URL.
 * A wrong digest or a missing entry is a clear error, never a broken image.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';
import { buildSyntheticLiveIso, xorrisoAvailable, type SyntheticIso } from '../support/live-iso';
import { tempDir } from '../support/services';

const d = xorrisoAvailable() ? describe : describe.skip;

d('base-image catalogue', () => {
  let iso: SyntheticIso;
  let isoBytes: Buffer;
  let origin: Server;
  let originUrl: string;
  const hits: string[] = [];
  const storeDir = tempDir('base-image-store');
  const harnesses: ApiHarness[] = [];
  let releasesFile: string;

  beforeAll(async () => {
    iso = await buildSyntheticLiveIso({ fillerBytes: 3 * 1024 * 1024, name: 'catalogued.iso' });
    isoBytes = readFileSync(iso.path);
    // The origin answers slowly so that concurrent first downloads overlap.
    origin = createServer((req, res) => {
      hits.push(req.url!);
      setTimeout(() => res.end(isoBytes), 300);
    });
    await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
    originUrl = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;
    const sha256 = createHash('sha256').update(isoBytes).digest('hex');
    releasesFile = path.join(tempDir('releases'), 'releases.json');
    writeFileSync(
      releasesFile,
      JSON.stringify({
        '1.31': {
          display_name: 'Kubernetes 1.31.4',
          kubernetes_version: '1.31.4',
          cpu_architectures: ['x86_64', 'arm64'],
          base_images: { x86_64: { url: `${originUrl}/rhcos-1.31-x86_64.iso`, sha256 }, arm64: { url: pathToFileURL(iso.path).href } },
        },
        '1.32': { display_name: 'Kubernetes 1.32.0', kubernetes_version: '1.32.0', default: true, cpu_architectures: ['x86_64'], base_images: { x86_64: { url: `${originUrl}/tampered.iso`, sha256: 'f'.repeat(64) } } },
        '1.30': { display_name: 'Kubernetes 1.30.8', kubernetes_version: '1.30.8', cpu_architectures: ['x86_64'] },
      }),
    );
  });
  afterAll(async () => {
    for (const h of harnesses) await h.stop();
    origin?.close();
  });

  async function api(cacheDir: string): Promise<ApiHarness> {
    const h = await startApiHarness({ env: { RELEASES_FILE: releasesFile, IMAGE_CACHE_DIR: cacheDir, STORAGE_LOCAL_DIR: storeDir } });
    harnesses.push(h);
    return h;
  }
  async function isoUrl(h: ApiHarness, release: string, arch = 'x86_64'): Promise<string> {
    const ie = await call('POST', `${h.base}/infra-envs`, { body: { name: `ie-${release}-${arch}`, pull_secret: PULL_SECRET, openshift_version: release, cpu_architecture: arch } });
    expect(ie.status).toBe(201);
    return (await call('GET', `${h.base}/infra-envs/${ie.body.id}/downloads/image-url`)).body.url as string;
  }
  const outsideEmbedArea = (body: Buffer) => Buffer.concat([body.subarray(0, iso.ignition.offset), body.subarray(iso.ignition.offset + iso.ignition.length)]);

  it('fetches a catalogued image once, keeps it in object storage and serves the discovery ISO from it', async () => {
    const cacheA = tempDir('image-cache-a');
    const h = await api(cacheA);
    const url = await isoUrl(h, '1.31');
    const downloads = await Promise.all([1, 2, 3].map(() => fetch(url).then(async (r) => ({ status: r.status, body: Buffer.from(await r.arrayBuffer()) }))));
    for (const r of downloads) {
      expect(r.status).toBe(200);
      expect(r.body.length).toBe(isoBytes.length);
      expect(outsideEmbedArea(r.body).equals(outsideEmbedArea(isoBytes))).toBe(true);
    }
    expect(hits.filter((u) => u.includes('rhcos-1.31'))).toEqual(['/rhcos-1.31-x86_64.iso']);
    // (The API also fetched the other catalogued images in the background when it started.)
    const stored = readdirSync(path.join(storeDir, 'base-images')).filter((f) => f.startsWith('1.31-x86_64'));
    expect(stored).toEqual([expect.stringMatching(/^1\.31-x86_64-[0-9a-f]{16}\.iso$/)]);
    expect(readFileSync(path.join(storeDir, 'base-images', stored[0]!)).equals(isoBytes)).toBe(true);
    // The public boot artifacts of that release come from the same image.
    expect((await fetch(`${h.url}/images/boot-artifacts/1.31/x86_64/vmlinuz`).then((r) => r.text()))).toContain('landfall synthetic kernel');
  });

  it('a second API process with an empty disk cache takes the image from object storage, not the URL', async () => {
    const fromUrl = () => hits.filter((u) => u.includes('rhcos-1.31')).length;
    const before = fromUrl();
    const h = await api(tempDir('image-cache-b'));
    const r = await fetch(await isoUrl(h, '1.31'));
    expect(r.status).toBe(200);
    expect(Buffer.from(await r.arrayBuffer()).length).toBe(isoBytes.length);
    expect(fromUrl()).toBe(before);
  });

  it('takes file URLs too (arm64 here)', async () => {
    const h = harnesses[0]!;
    const r = await fetch(await isoUrl(h, '1.31', 'arm64'));
    expect(r.status).toBe(200);
    expect(Buffer.from(await r.arrayBuffer()).length).toBe(isoBytes.length);
  });

  it('refuses an image whose sha256 does not match, keeping nothing of it', async () => {
    const cache = tempDir('image-cache-c');
    const h = await api(cache);
    const r = await call('GET', await isoUrl(h, '1.32'));
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({ kind: 'Error', id: 503, reason: expect.stringMatching(/1\.32-x86_64-f{16}\.iso from http:\/\/127\.0\.0\.1:\d+\/tampered\.iso does not match its sha256/) });
    expect(readdirSync(cache).filter((f) => f.startsWith('1.32'))).toEqual([]);
    expect(existsSync(path.join(storeDir, 'base-images')) && readdirSync(path.join(storeDir, 'base-images')).some((f) => f.startsWith('1.32'))).toBe(false);
  });

  it('names the release and architecture when the catalogue has no image and BASE_ISO_PATH is unset', async () => {
    const h = harnesses[0]!;
    const r = await call('GET', await isoUrl(h, '1.30'));
    expect(r.status).toBe(404);
    expect(r.body.reason).toMatch(/no base image is configured for release 1\.30 on x86_64/);
  });
});
