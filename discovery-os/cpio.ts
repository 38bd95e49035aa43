/**
 * The newc ("070701") cpio format, the one the kernel unpacks as an
 * initramfs: pure functions, no file system access. Shared by the image
 * build (mkcpio.ts) and the agent, which writes the installed OS's
 * configuration initrd (agent/executors/landfall-disk.ts) with it.
 */
export interface CpioEntry {
  name: string;
  /** Full st_mode: type bits and permissions. */
  mode: number;
  data: Buffer;
  rdevMajor?: number;
  rdevMinor?: number;
}

export const S_IFDIR = 0o040000;
export const S_IFREG = 0o100000;
export const S_IFLNK = 0o120000;
export const S_IFCHR = 0o020000;
export const S_IFBLK = 0o060000;

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
