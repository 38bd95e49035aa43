/**
 * Just enough ISO 9660 to find a file's bytes in an image: the primary volume
 * descriptor's root directory, then one directory listing per path component.
 * Names are the primary (8.3, upper case) names, with the ";1" version and a
 * trailing "." dropped — the same names coreos-installer looks up
 * ("COREOS/KARGS.JSO", "IMAGES/IGNITION.IMG"). Rock Ridge and Joliet names are
 * not read. Reads are positional on an open FileHandle; nothing is buffered
 * beyond one directory.
 */
import type { FileHandle } from 'node:fs/promises';

export const SECTOR = 2048;
/** Directories larger than this are not ours to read (a live ISO's are a few KiB). */
const MAX_DIRECTORY_BYTES = 4 * 1024 * 1024;
const MAX_DESCRIPTORS = 64;

export class IsoFormatError extends Error {}

export interface IsoEntry {
  name: string;
  /** Byte offset of the extent in the image. */
  offset: number;
  length: number;
  directory: boolean;
}

async function readAt(fh: FileHandle, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await fh.read(buf, done, length - done, position + done);
    if (bytesRead === 0) throw new IsoFormatError(`image ends before byte ${position + length}`);
    done += bytesRead;
  }
  return buf;
}

function parseRecord(buf: Buffer, pos: number): { len: number; entry?: IsoEntry } {
  const len = buf[pos]!;
  if (pos + len > buf.length || len < 34) throw new IsoFormatError('truncated directory record');
  const extent = buf.readUInt32LE(pos + 2);
  const length = buf.readUInt32LE(pos + 10);
  const flags = buf[pos + 25]!;
  const nameLen = buf[pos + 32]!;
  if (33 + nameLen > len) throw new IsoFormatError('directory record name overruns the record');
  const raw = buf.subarray(pos + 33, pos + 33 + nameLen);
  // "\0" and "\1" are "." and "..".
  if (nameLen === 1 && (raw[0] === 0 || raw[0] === 1)) return { len };
  let name = raw.toString('latin1');
  if (name.endsWith(';1')) name = name.slice(0, -2);
  if (name.endsWith('.')) name = name.slice(0, -1);
  return { len, entry: { name, offset: extent * SECTOR, length, directory: (flags & 2) !== 0 } };
}

export class IsoImage {
  private constructor(
    private readonly fh: FileHandle,
    readonly root: IsoEntry,
    /** Volume space size in bytes, from the primary volume descriptor. */
    readonly volumeBytes: number,
  ) {}

  static async open(fh: FileHandle): Promise<IsoImage> {
    for (let i = 0; i < MAX_DESCRIPTORS; i++) {
      const d = await readAt(fh, (16 + i) * SECTOR, SECTOR);
      if (d.toString('latin1', 1, 6) !== 'CD001') throw new IsoFormatError('no ISO 9660 volume descriptor at sector 16 (not an ISO image)');
      const type = d[0];
      if (type === 255) break;
      if (type !== 1) continue;
      const volumeBytes = d.readUInt32LE(80) * SECTOR;
      // The root directory record (34 bytes at 156): extent at +2, data length at +10, both little-endian halves.
      return new IsoImage(fh, { name: '', offset: d.readUInt32LE(156 + 2) * SECTOR, length: d.readUInt32LE(156 + 10), directory: true }, volumeBytes);
    }
    throw new IsoFormatError('no primary volume descriptor');
  }

  async list(dir: IsoEntry): Promise<IsoEntry[]> {
    if (!dir.directory) throw new IsoFormatError(`${dir.name} is not a directory`);
    if (dir.length > MAX_DIRECTORY_BYTES) throw new IsoFormatError(`directory ${dir.name} is implausibly large (${dir.length} bytes)`);
    const buf = await readAt(this.fh, dir.offset, dir.length);
    const out: IsoEntry[] = [];
    let pos = 0;
    while (pos < buf.length) {
      if (buf[pos] === 0) {
        // Records do not cross sectors; a zero length byte pads to the next one.
        pos = (Math.floor(pos / SECTOR) + 1) * SECTOR;
        continue;
      }
      const { len, entry } = parseRecord(buf, pos);
      if (entry) out.push(entry);
      pos += len;
    }
    return out;
  }

  /** The entry at an upper-case primary path ("IMAGES/IGNITION.IMG"), or undefined. */
  async find(path: string): Promise<IsoEntry | undefined> {
    let cur = this.root;
    for (const part of path.split('/').filter(Boolean)) {
      if (!cur.directory) return undefined;
      const next = (await this.list(cur)).find((e) => e.name === part);
      if (!next) return undefined;
      cur = next;
    }
    return cur;
  }

  read(offset: number, length: number): Promise<Buffer> {
    return readAt(this.fh, offset, length);
  }
}
