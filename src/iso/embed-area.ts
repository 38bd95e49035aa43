/**
 * The embed areas of a CoreOS-style live ISO, as coreos-installer 0.27 finds
 * and fills them (src/live/embed.rs, src/io/initrd.rs, docs/iso-embed-ignition.md):
 *
 * - Ignition: the file named by /coreos/igninfo.json (`{"file", "offset"?,
 *   "length"?}`), or /images/ignition.img when that JSON is absent. The whole
 *   file (or offset/length within it) is the area; the bootloader loads it as
 *   an extra initrd. It holds a compressed newc cpio archive with `config.ign`,
 *   zero-padded to the area's size (all zero: nothing embedded). coreos-installer
 *   sniffs gzip, xz or zstd; we write gzip, which the kernel unpacks too.
 *   (The old "coreiso+" header at the end of the 32 KiB system area is no
 *   longer read by coreos-installer since 2021; we do not read it either.)
 * - Kernel arguments: /coreos/kargs.json (`{"default", "files": [{"path",
 *   "offset", "pad"?, "end"?}], "size"}`): the same `size` bytes at `offset` in
 *   each listed file (bootloader configs) hold the arguments, then `end`
 *   (default "\n"), then `pad` (default "#") to the end. The arguments must be
 *   shorter than `size`; `size` is at most 2048. (The legacy "coreKarg" header
 *   in the system area is not read.)
 *
 * ISO 9660 paths are looked up by their primary upper-case names, as
 * coreos-installer does ("COREOS/KARGS.JSO": 8.3 names truncate ".json").
 */
import { gzipSync } from 'node:zlib';
import type { FileHandle } from 'node:fs/promises';
import { IsoImage, IsoFormatError } from './iso9660';

const IGNINFO_PATH = 'COREOS/IGNINFO.JSO';
const DEFAULT_IGNITION_PATH = 'IMAGES/IGNITION.IMG';
const KARGS_INFO_PATH = 'COREOS/KARGS.JSO';
const KARGS_MAX_SIZE = 2048;
const INFO_JSON_MAX_BYTES = 64 * 1024;

export class EmbedAreaError extends Error {}

export interface ByteRegion {
  offset: number;
  length: number;
}

export interface KargsRegion {
  offset: number;
  pad: string;
  end: string;
}

export interface KargsAreas {
  /** Bytes of each region. */
  size: number;
  /** The image's default kernel arguments. */
  default: string;
  regions: KargsRegion[];
}

export interface IsoLayout {
  /** Bytes of the whole image file. */
  size: number;
  ignition: ByteRegion;
  kargs?: KargsAreas;
}

/** Bytes to put at `offset` in place of the base image's. */
export interface Patch {
  offset: number;
  data: Buffer;
}

async function readJson(iso: IsoImage, path: string): Promise<unknown> {
  const e = await iso.find(path);
  if (!e) return undefined;
  if (e.directory || e.length > INFO_JSON_MAX_BYTES) throw new EmbedAreaError(`${path} is not a small JSON file`);
  try {
    return JSON.parse((await iso.read(e.offset, e.length)).toString('utf8'));
  } catch (err) {
    throw new EmbedAreaError(`${path} is not valid JSON: ${(err as Error).message}`);
  }
}

function inBounds(r: ByteRegion, size: number, what: string): void {
  if (!Number.isSafeInteger(r.offset) || !Number.isSafeInteger(r.length) || r.offset < 0 || r.length <= 0 || r.offset + r.length > size) {
    throw new EmbedAreaError(`${what} (${r.length} bytes at ${r.offset}) lies outside the image (${size} bytes)`);
  }
}

/** Finds the Ignition and kernel-argument embed areas of a live ISO. */
export async function readIsoLayout(fh: FileHandle): Promise<IsoLayout> {
  const { size } = await fh.stat();
  let iso: IsoImage;
  try {
    iso = await IsoImage.open(fh);
  } catch (err) {
    if (err instanceof IsoFormatError) throw new EmbedAreaError(`not an ISO 9660 image: ${err.message}`);
    throw err;
  }
  if (iso.volumeBytes > size) throw new EmbedAreaError(`ISO image is incomplete (${size} of ${iso.volumeBytes} bytes)`);

  const ign = (await readJson(iso, IGNINFO_PATH)) as { file?: unknown; offset?: unknown; length?: unknown } | undefined;
  const ignPath = ign ? String(ign.file ?? '').toUpperCase() : DEFAULT_IGNITION_PATH;
  const ignFile = await iso.find(ignPath.replace(/^\/+/, ''));
  if (!ignFile || ignFile.directory) throw new EmbedAreaError(`not a CoreOS live ISO: no Ignition embed area (${ignPath})`);
  const within = typeof ign?.offset === 'number' ? ign.offset : 0;
  const ignition = { offset: ignFile.offset + within, length: typeof ign?.length === 'number' ? ign.length : ignFile.length - within };
  inBounds(ignition, size, 'the Ignition embed area');

  const info = (await readJson(iso, KARGS_INFO_PATH)) as { default?: unknown; files?: unknown; size?: unknown } | undefined;
  if (!info) return { size, ignition };
  if (typeof info.size !== 'number' || info.size <= 0 || info.size > KARGS_MAX_SIZE) throw new EmbedAreaError(`kargs.json: size must be 1..${KARGS_MAX_SIZE}`);
  if (typeof info.default !== 'string' || info.default.length > info.size) throw new EmbedAreaError('kargs.json: default must be a string no longer than size');
  if (!Array.isArray(info.files) || info.files.length === 0) throw new EmbedAreaError('kargs.json: files must list at least one embed area');
  const regions: KargsRegion[] = [];
  for (const f of info.files as Array<{ path?: unknown; offset?: unknown; pad?: unknown; end?: unknown }>) {
    const p = String(f.path ?? '').toUpperCase().replace(/^\/+/, '');
    const entry = await iso.find(p);
    if (!entry || entry.directory) throw new EmbedAreaError(`kargs.json names ${String(f.path)}, which the image does not have`);
    if (typeof f.offset !== 'number') throw new EmbedAreaError(`kargs.json: ${String(f.path)} has no offset`);
    const r = { offset: entry.offset + f.offset, length: info.size };
    inBounds(r, size, `the kernel-argument area in ${String(f.path)}`);
    if (r.offset < ignition.offset + ignition.length && ignition.offset < r.offset + r.length) throw new EmbedAreaError('a kernel-argument area overlaps the Ignition embed area');
    const one = (v: unknown, d: string) => (typeof v === 'string' && v.length === 1 ? v : d);
    regions.push({ offset: r.offset, pad: one(f.pad, '#'), end: one(f.end, '\n') });
  }
  regions.sort((a, b) => a.offset - b.offset);
  return { size, ignition, kargs: { size: info.size, default: info.default.trim(), regions } };
}

/** One newc ("070701") cpio archive: the files given, then the TRAILER!!! entry. */
export function cpioNewc(files: Array<{ name: string; data: Buffer; mode?: number }>): Buffer {
  const parts: Buffer[] = [];
  let ino = 1;
  const pad4 = (n: number) => Buffer.alloc((4 - (n % 4)) % 4);
  const entry = (name: string, data: Buffer, mode: number, nlink: number, inode: number) => {
    const nameBuf = Buffer.from(`${name}\0`, 'utf8');
    const fields = [inode, mode, 0, 0, nlink, 0, data.length, 0, 0, 0, 0, nameBuf.length, 0];
    const header = Buffer.from(`070701${fields.map((v) => v.toString(16).padStart(8, '0')).join('')}`, 'ascii');
    parts.push(header, nameBuf, pad4(header.length + nameBuf.length), data, pad4(data.length));
  };
  // S_IFREG | 0600 by default, as coreos-installer writes config.ign.
  for (const f of files) entry(f.name, f.data, f.mode ?? 0o100600, 1, ino++);
  entry('TRAILER!!!', Buffer.alloc(0), 0, 1, 0);
  return Buffer.concat(parts);
}

/**
 * The bytes of an Ignition embed area of `areaLength` bytes holding `config`:
 * gzip(cpio newc with config.ign), zero-padded. Throws EmbedAreaError when the
 * compressed archive does not fit.
 */
export function ignitionAreaBytes(config: string | Buffer, areaLength: number): Buffer {
  const archive = gzipSync(cpioNewc([{ name: 'config.ign', data: Buffer.isBuffer(config) ? config : Buffer.from(config, 'utf8') }]), { level: 9 });
  if (archive.length > areaLength) {
    throw new EmbedAreaError(`the discovery Ignition does not fit the image's embed area: ${archive.length} bytes compressed, the area holds ${areaLength}`);
  }
  const out = Buffer.alloc(areaLength);
  archive.copy(out);
  return out;
}

/** The bytes of one kernel-argument region: the arguments, its end character, its padding. */
export function kargsRegionBytes(kargs: string, size: number, region: Pick<KargsRegion, 'pad' | 'end'>): Buffer {
  const args = kargs.trim();
  // eslint-disable-next-line no-control-regex -- control characters would break the bootloader config line
  if (/[\u0000-\u001f\u007f]/.test(args)) throw new EmbedAreaError('kernel arguments must be one line of printable characters');
  const bytes = Buffer.from(args + region.end, 'utf8');
  if (bytes.length > size) throw new EmbedAreaError(`the kernel arguments do not fit the image's area: ${bytes.length} bytes, the area holds ${size}`);
  const out = Buffer.alloc(size, region.pad);
  bytes.copy(out);
  return out;
}

/**
 * The kernel arguments of a minimal ISO: the image's defaults without
 * coreos.liveiso= (the live system must not look for its rootfs on the ISO),
 * plus coreos.live.rootfs_url= — what `coreos-installer iso extract
 * minimal-iso --rootfs-url` writes.
 */
export function minimalIsoKargs(defaults: string, rootfsUrl: string): string {
  if (/\s/.test(rootfsUrl)) throw new EmbedAreaError('the rootfs URL must not contain whitespace');
  const kept = defaults.split(/\s+/).filter((k) => k && !k.startsWith('coreos.liveiso=') && !k.startsWith('coreos.live.rootfs_url='));
  return [...kept, `coreos.live.rootfs_url=${rootfsUrl}`].join(' ');
}

/** Patches that write `kargs` into every kernel-argument region of the layout. */
export function kargsPatches(layout: IsoLayout, kargs: string): Patch[] {
  if (!layout.kargs) throw new EmbedAreaError('the image has no kernel-argument embed area (no /coreos/kargs.json)');
  const areas = layout.kargs;
  return areas.regions.map((r) => ({ offset: r.offset, data: kargsRegionBytes(kargs, areas.size, r) }));
}
