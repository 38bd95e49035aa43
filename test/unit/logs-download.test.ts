/**
 * The logs download streams: it reads one stored archive at a time, only as
 * fast as the client takes the bytes, and stops reading when the client goes
 * away. A fake store counts what was read.
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { downloadLogs } from '../../src/services/logs-service';
import type { ServiceContext } from '../../src/services/context';
import type { ObjectInfo } from '../../src/storage';
import { readTarGz } from '../support/tar-read';

const MIB = 1024 * 1024;
const CLUSTER = '6f0c2d8e-1111-4222-8333-444455556666';
const HOSTS = ['a1', 'b2', 'c3'];

function fakeContext(sizeBytes: number) {
  const read = { bytes: 0, opened: 0, closed: 0 };
  const objects: ObjectInfo[] = [...HOSTS.map((h) => ({ key: `clusters/${CLUSTER}/logs/host/${h}.tar.gz`, sizeBytes, modifiedAt: new Date(0) })), { key: `clusters/${CLUSTER}/logs/controller/controller.tar.gz`, sizeBytes, modifiedAt: new Date(0) }];
  const store = {
    list: async () => objects,
    getStream: async (_key: string) => {
      read.opened++;
      let left = sizeBytes;
      const s = new Readable({
        highWaterMark: 64 * 1024,
        read() {
          if (left <= 0) return void this.push(null);
          const n = Math.min(64 * 1024, left);
          left -= n;
          read.bytes += n;
          // Incompressible, like real compressed archives: gzip output then tracks what was read.
          this.push(randomBytes(n));
        },
      });
      s.on('close', () => read.closed++);
      return s;
    },
    async open(key: string) {
      return { stream: await store.getStream(key), sizeBytes };
    },
  };
  // The hosts query, and an empty refresh queue for the read's settling (refresh-queue.ts).
  const db = Object.assign(
    (table: string) => (table === 'refresh_requests' ? { whereIn: () => ({ distinct: async () => [] }) } : { where: () => ({ select: async () => [{ id: 'a1', requested_hostname: 'master-0', inventory: null }] }) }),
    { raw: async () => ({ rows: [] }) },
  );
  const ctx = { store, db, repos: { clusters: { get: async () => ({ id: CLUSTER, name: 'demo', owner: 'x' }) }, infraEnvs: { idsBoundTo: async () => [] } } } as unknown as ServiceContext;
  return { ctx, read };
}

const admin = { kind: 'admin', user: 'root' } as const;

describe('logs download', () => {
  it('bundles every stored archive into one tar.gz entry each', async () => {
    const { ctx } = fakeContext(100_000);
    const d = await downloadLogs(ctx, admin as never, CLUSTER, 'all');
    expect(d.fileName).toBe(`demo_${CLUSTER}_all.tar.gz`);
    const chunks: Buffer[] = [];
    for await (const c of d.stream) chunks.push(c as Buffer);
    const entries = await readTarGz(Buffer.concat(chunks));
    expect([...entries.keys()]).toEqual(['master-0_a1.tar.gz', 'deleted-host_b2.tar.gz', 'deleted-host_c3.tar.gz', 'controller.tar.gz']);
    for (const body of entries.values()) expect(body.length).toBe(100_000);
  });

  it('reads from the store only as fast as the client takes the bytes, and stops when the client leaves', async () => {
    const { ctx, read } = fakeContext(8 * MIB);
    const d = await downloadLogs(ctx, admin as never, CLUSTER, 'all');
    // Take a little, then wait: the producer must not run ahead by more than a few buffers.
    let taken = 0;
    for await (const c of d.stream) {
      taken += (c as Buffer).length;
      if (taken > 64 * 1024) break;
    }
    await new Promise((r) => setTimeout(r, 200));
    expect(read.bytes).toBeLessThan(2 * MIB);
    // `break` destroyed the download stream: the open store stream is closed and no other is opened.
    await new Promise((r) => setTimeout(r, 100));
    expect(read.opened).toBe(1);
    expect(read.closed).toBe(1);
  });
});
