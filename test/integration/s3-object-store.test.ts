import { Readable } from 'node:stream';
import { S3ObjectStore } from '../../src/storage/s3-object-store';
import { streamToBuffer } from '../../src/storage/object-store';
import { startTestMinio, type TestMinio } from '../support/services';

let minio: TestMinio;
beforeAll(async () => {
  minio = await startTestMinio();
});
afterAll(async () => {
  await minio?.stop();
});

const storeFor = (bucket: string, secretKey = minio.secretKey) =>
  new S3ObjectStore({ endpoint: minio.endpoint, accessKey: minio.accessKey, secretKey, bucket, region: 'us-east-1' });

describe('S3ObjectStore against a real MinIO', () => {
  it('creates its bucket on first use and round-trips objects', async () => {
    const store = storeFor('landfall-roundtrip');
    await store.ping();
    await store.put('clusters/c1/master.ign', '{"ignition":{"version":"3.4.0"}}', 'application/json');
    await store.put('clusters/c1/big.bin', Readable.from((function* () {
      for (let i = 0; i < 64; i++) yield Buffer.alloc(64 * 1024, i);
    })()));
    await store.put('clusters/c2/x', 'other');
    expect((await store.getBuffer('clusters/c1/master.ign')).toString()).toContain('3.4.0');
    const big = await store.getBuffer('clusters/c1/big.bin');
    expect(big.length).toBe(64 * 64 * 1024);
    expect(big[64 * 1024 * 10]).toBe(10);
    expect((await store.list('clusters/c1/')).map((o) => [o.key, o.sizeBytes])).toEqual([
      ['clusters/c1/big.bin', 4194304],
      ['clusters/c1/master.ign', 32],
    ]);
    await store.delete('clusters/c1/master.ign');
    expect(await store.stat('clusters/c1/master.ign')).toBeNull();
  });

  it('opens one version: the size its GET answered and those bytes, while the key is written again', async () => {
    const store = storeFor('landfall-open');
    await store.put('logs/h.tar.gz', Buffer.alloc(1000, 1));
    const opened = (await store.open('logs/h.tar.gz'))!;
    expect(opened.sizeBytes).toBe(1000);
    const bytes = await streamToBuffer(opened.stream);
    expect([bytes.length, bytes.every((b) => b === 1)]).toEqual([1000, true]);
    await store.put('logs/h.tar.gz', Buffer.alloc(5000, 2));
    expect((await store.open('logs/h.tar.gz'))!.sizeBytes).toBe(5000);
    expect(await store.open('logs/none')).toBeNull();
  });

  it('fails ping with wrong credentials and does not echo the secret', async () => {
    const bad = storeFor('landfall-roundtrip', 'definitely-wrong-secret');
    const err = await bad.ping().then(() => undefined, (e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect(String(err?.message)).not.toContain('definitely-wrong-secret');
    expect(bad.description).not.toContain('definitely-wrong-secret');
  });

  it('rejects keys that climb out of the prefix', async () => {
    await expect(storeFor('landfall-roundtrip').put('../escape', 'x')).rejects.toThrow(/invalid object key/);
  });
});

describe('S3ObjectStore: two processes streaming one key at once', () => {
  it('both succeed and the key holds one whole body, not a mix (the minio client would resume the other upload)', async () => {
    // Two stores are two processes (two API replicas warming the same base image).
    const first = storeFor('landfall-race');
    const second = storeFor('landfall-race');
    await first.ping();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let firstRead!: () => void;
    const firstStarted = new Promise<void>((r) => (firstRead = r));
    const slow = Readable.from((async function* () {
      yield Buffer.alloc(256 * 1024, 1);
      firstRead();
      await gate;
      yield Buffer.alloc(256 * 1024, 1);
    })());
    const slowPut = first.put('base-images/same.iso', slow);
    // The first upload is open (its stream is being read) before the second starts.
    await firstStarted;
    const fast = Readable.from((function* () {
      for (let i = 0; i < 4; i++) yield Buffer.alloc(128 * 1024, 2);
    })());
    await expect(second.put('base-images/same.iso', fast)).resolves.toMatchObject({ sizeBytes: 512 * 1024 });
    release();
    await expect(slowPut).resolves.toMatchObject({ sizeBytes: 512 * 1024 });
    const body = await first.getBuffer('base-images/same.iso');
    // The first finished last, so its body is the one kept, whole.
    expect([body.length, body.every((b) => b === 1)]).toEqual([512 * 1024, true]);
    // Nothing is left behind under the staging keys, and listing never shows them.
    expect((await first.list('')).map((o) => o.key)).toEqual(['base-images/same.iso']);
  });

  it('a staging object a dead process left is deleted by the sweep; a fresh one is not', async () => {
    const store = storeFor('landfall-race');
    // What a process that died between its upload and its copy leaves: an object under the staging prefix.
    await store.put('.staging/left-behind', Buffer.alloc(10, 3));
    expect(await store.sweepStaging()).toBe(0);
    expect(await store.stat('.staging/left-behind')).not.toBeNull();
    expect(await store.sweepStaging(0)).toBe(1);
    expect(await store.stat('.staging/left-behind')).toBeNull();
    expect(await store.stat('base-images/same.iso')).not.toBeNull();
  });
});
