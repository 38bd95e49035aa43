import { createReadStream, createWriteStream, promises as fs } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomUUID } from 'node:crypto';
import { assertValidKey, streamToBuffer, type ObjectInfo, type ObjectStore } from './object-store';

/** Objects as files under one directory: the zero-setup default. */
export class LocalObjectStore implements ObjectStore {
  readonly description: string;

  constructor(private readonly root: string) {
    this.description = `local:${root}`;
  }

  private pathOf(key: string): string {
    assertValidKey(key);
    return path.join(this.root, ...key.split('/'));
  }

  async put(key: string, body: Buffer | string | Readable): Promise<ObjectInfo> {
    const target = this.pathOf(key);
    await fs.mkdir(path.dirname(target), { recursive: true });
    // Write to a temporary name and rename, so a reader never sees half an object.
    const tmp = `${target}.${randomUUID()}.partial`;
    try {
      const source = body instanceof Readable ? body : Readable.from([Buffer.from(body)]);
      await pipeline(source, createWriteStream(tmp, { flags: 'wx' }));
      await fs.rename(tmp, target);
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    }
    return (await this.stat(key))!;
  }

  async stat(key: string): Promise<ObjectInfo | null> {
    try {
      const s = await fs.stat(this.pathOf(key));
      return s.isFile() ? { key, sizeBytes: s.size, modifiedAt: s.mtime } : null;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async getStream(key: string): Promise<Readable> {
    const p = this.pathOf(key);
    await fs.access(p);
    return createReadStream(p);
  }

  async open(key: string): Promise<{ stream: Readable; sizeBytes: number } | null> {
    // One descriptor for the size and the bytes: a put renames a new file in, this one keeps the old inode.
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(this.pathOf(key), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    try {
      const s = await handle.stat();
      if (!s.isFile()) throw new Error(`not an object: ${key}`);
      return { stream: handle.createReadStream(), sizeBytes: s.size };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  async getBuffer(key: string): Promise<Buffer> {
    return streamToBuffer(await this.getStream(key));
  }

  async delete(key: string): Promise<void> {
    await fs.rm(this.pathOf(key), { force: true });
  }

  async list(prefix: string): Promise<ObjectInfo[]> {
    const out: ObjectInfo[] = [];
    const walk = async (dir: string, rel: string): Promise<void> => {
      let entries;
      try {
        entries = await fs.readdir(dir, { withFileTypes: true });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw err;
      }
      for (const e of entries) {
        const key = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory()) await walk(path.join(dir, e.name), key);
        else if (e.isFile() && !e.name.endsWith('.partial') && key.startsWith(prefix)) {
          const info = await this.stat(key);
          if (info) out.push(info);
        }
      }
    };
    await walk(this.root, '');
    return out.sort((a, b) => a.key.localeCompare(b.key));
  }

  async ping(): Promise<void> {
    await fs.mkdir(this.root, { recursive: true });
    // Writable, not merely present: a read-only mount must fail readiness.
    await fs.access(this.root, fs.constants.W_OK);
  }
}
