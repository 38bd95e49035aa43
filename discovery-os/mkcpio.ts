/**
 * Writes a directory tree as a newc ("070701") cpio archive on stdout, the
 * format the kernel unpacks as an initramfs and busybox `cpio -i` reads.
 * Used by scripts/build-discovery-os.sh instead of GNU cpio so that the
 * archive is reproducible and needs no root:
 *
 * - entries sorted by path, directories before their contents;
 * - every mtime is SOURCE_DATE_EPOCH (default 0), owner root:root, inode
 *   numbers counted from 1 in that order (hard links become separate files);
 * - `--dev PATH:c|b:MAJOR:MINOR:MODE` adds a device node that the tree cannot
 *   hold without mknod (the initramfs needs /dev/console before devtmpfs is
 *   mounted, or the kernel has no console to give init).
 *
 *   node mkcpio.js DIR [--dev dev/console:c:5:1:600 ...] > archive.cpio
 */
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';

export interface CpioEntry {
  name: string;
  /** Full st_mode: type bits and permissions. */
  mode: number;
  data: Buffer;
  rdevMajor?: number;
  rdevMinor?: number;
}

const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;
const S_IFLNK = 0o120000;
const S_IFCHR = 0o020000;
const S_IFBLK = 0o060000;

/** Every entry under `root` (relative names, no leading "./"), parents before children, sorted. */
export function treeEntries(root: string): CpioEntry[] {
  const out: CpioEntry[] = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(path.join(root, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const abs = path.join(root, r);
      const st = lstatSync(abs);
      const perm = st.mode & 0o7777;
      if (st.isDirectory()) {
        out.push({ name: r, mode: S_IFDIR | perm, data: Buffer.alloc(0) });
        walk(r);
      } else if (st.isSymbolicLink()) {
        out.push({ name: r, mode: S_IFLNK | 0o777, data: Buffer.from(readlinkSync(abs), 'utf8') });
      } else if (st.isFile()) {
        out.push({ name: r, mode: S_IFREG | perm, data: readFileSync(abs) });
      } else {
        throw new Error(`${abs}: only directories, files and symbolic links can be archived (use --dev for device nodes)`);
      }
    }
  };
  walk('');
  return out;
}

/** Parses `PATH:c|b:MAJOR:MINOR:MODE` (mode in octal). */
export function deviceEntry(spec: string): CpioEntry {
  const m = /^([^:]+):([cb]):(\d+):(\d+):([0-7]{3,4})$/.exec(spec);
  if (!m) throw new Error(`--dev ${spec}: expected PATH:c|b:MAJOR:MINOR:MODE`);
  return { name: m[1]!.replace(/^\/+/, ''), mode: (m[2] === 'c' ? S_IFCHR : S_IFBLK) | parseInt(m[5]!, 8), data: Buffer.alloc(0), rdevMajor: Number(m[3]), rdevMinor: Number(m[4]) };
}

/** The archive: the entries in the order given, then TRAILER!!!. */
export function newcArchive(entries: CpioEntry[], mtime: number): Buffer {
  const parts: Buffer[] = [];
  const pad4 = (n: number) => Buffer.alloc((4 - (n % 4)) % 4);
  const push = (e: CpioEntry, ino: number) => {
    const name = Buffer.from(`${e.name}\0`, 'utf8');
    const isDir = (e.mode & 0o170000) === S_IFDIR;
    // ino mode uid gid nlink mtime filesize devmajor devminor rdevmajor rdevminor namesize check
    const fields = [ino, e.mode, 0, 0, isDir ? 2 : 1, mtime, e.data.length, 0, 0, e.rdevMajor ?? 0, e.rdevMinor ?? 0, name.length, 0];
    const header = Buffer.from(`070701${fields.map((v) => v.toString(16).padStart(8, '0')).join('')}`, 'ascii');
    parts.push(header, name, pad4(header.length + name.length), e.data, pad4(e.data.length));
  };
  entries.forEach((e, i) => push(e, i + 1));
  push({ name: 'TRAILER!!!', mode: 0, data: Buffer.alloc(0) }, 0);
  return Buffer.concat(parts);
}

function main(argv: string[]): void {
  const root = argv[0];
  if (!root) throw new Error('usage: mkcpio DIR [--dev PATH:c|b:MAJOR:MINOR:MODE ...]');
  const devices: CpioEntry[] = [];
  for (let i = 1; i < argv.length; i++) {
    if (argv[i] === '--dev' && argv[i + 1]) devices.push(deviceEntry(argv[++i]!));
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  const entries = [...treeEntries(root), ...devices].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const mtime = Number(process.env.SOURCE_DATE_EPOCH ?? 0);
  process.stdout.write(newcArchive(entries, mtime));
}

if (require.main === module) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`mkcpio: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
