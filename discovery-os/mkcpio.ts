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
import { S_IFDIR, S_IFLNK, S_IFREG, deviceEntry, newcArchive, type CpioEntry } from './cpio';

export { deviceEntry, newcArchive, type CpioEntry };

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
