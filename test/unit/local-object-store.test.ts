import { promises as fs } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { LocalObjectStore } from '../../src/storage/local-object-store';
import { assertValidKey, streamToBuffer } from '../../src/storage/object-store';
import { tempDir } from '../support/services';

describe('object keys', () => {
  it.each(['../etc/passwd', '/abs', 'a//b', 'a/./b', 'a/../b', 'a\\b', '', 'x\0y'])('rejects %j', (key) => {
    expect(() => assertValidKey(key)).toThrow(/invalid object key/);
  });
  it.each(['a', 'clusters/1/ignition/master.ign', 'self-checks/x.json'])('accepts %j', (key) => {
    expect(() => assertValidKey(key)).not.toThrow();
  });
});

describe('LocalObjectStore', () => {
  it('puts, stats, reads, lists and deletes', async () => {
    const root = tempDir('objects');
    const store = new LocalObjectStore(root);
    await store.ping();
    const info = await store.put('clusters/c1/a.json', '{"a":1}');
    expect(info.sizeBytes).toBe(7);
    await store.put('clusters/c1/b.bin', Readable.from([Buffer.from('xy'), Buffer.from('z')]));
    await store.put('clusters/c2/c.txt', Buffer.from('other'));
    expect((await store.getBuffer('clusters/c1/b.bin')).toString()).toBe('xyz');
    expect((await store.list('clusters/c1/')).map((o) => o.key)).toEqual(['clusters/c1/a.json', 'clusters/c1/b.bin']);
    await store.delete('clusters/c1/a.json');
    expect(await store.stat('clusters/c1/a.json')).toBeNull();
    expect(await store.stat('clusters/c2/c.txt')).toMatchObject({ sizeBytes: 5 });
    // No temporary files left behind by the atomic write.
    const files = await fs.readdir(path.join(root, 'clusters', 'c1'));
    expect(files).toEqual(['b.bin']);
  });

  it('keeps the old object when a write fails half way', async () => {
    const store = new LocalObjectStore(tempDir('objects'));
    await store.put('k', 'original');
    const failing = new Readable({
      read() {
        this.push(Buffer.from('partial'));
        this.destroy(new Error('connection reset'));
      },
    });
    await expect(store.put('k', failing)).rejects.toThrow('connection reset');
    expect((await store.getBuffer('k')).toString()).toBe('original');
  });

  it('opens one version: its size and bytes stay those of the object opened while the key is written again', async () => {
    const store = new LocalObjectStore(tempDir('objects'));
    await store.put('logs/h.tar.gz', Buffer.alloc(1000, 1));
    const opened = (await store.open('logs/h.tar.gz'))!;
    await store.put('logs/h.tar.gz', Buffer.alloc(5000, 2));
    const bytes = await streamToBuffer(opened.stream);
    expect([opened.sizeBytes, bytes.length, bytes.every((b) => b === 1)]).toEqual([1000, 1000, true]);
    expect((await store.open('logs/h.tar.gz'))!.sizeBytes).toBe(5000);
    expect(await store.open('logs/none')).toBeNull();
  });

  it('fails readiness when its root cannot be a directory', async () => {
    const file = path.join(tempDir('objects'), 'not-a-dir');
    await fs.writeFile(file, 'x');
    await expect(new LocalObjectStore(file).ping()).rejects.toThrow();
  });
});
