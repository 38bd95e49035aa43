/**
 * A small synthetic CoreOS-style live ISO, built with xorriso, so that no real
 * image is downloaded: /images/ignition.img (zero-filled Ignition embed area),
 * /coreos/kargs.json describing kernel-argument areas in two bootloader
 * configs, a filler file standing in for kernel/initrd/rootfs, and the legacy
 * "coreiso+" header (magic, offset, length of the embed area, little-endian)
 * in the last 24 bytes of the 32 KiB system area. coreos-installer 0.27 finds
 * the areas through the ISO 9660 directory and kargs.json; the header is for
 * older readers.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, createWriteStream, mkdirSync, openSync, statSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import { tempDir } from './services';

export const DEFAULT_KARGS = 'mitigations=auto,nosmt coreos.liveiso=landfall-test-live ignition.firstboot ignition.platform.id=metal';
export const KARGS_AREA_SIZE = 1024;
export const IGNITION_AREA_SIZE = 256 * 1024;

export function xorrisoAvailable(): boolean {
  return spawnSync('xorriso', ['-version'], { stdio: 'ignore' }).status === 0;
}

export interface SyntheticIso {
  path: string;
  size: number;
  /** Byte offset and length of /images/ignition.img, as xorriso reports them. */
  ignition: { offset: number; length: number };
}

/** A deterministic, incompressible-looking filler (so misplaced bytes show). */
async function writeFiller(file: string, bytes: number): Promise<void> {
  const out = createWriteStream(file);
  const block = Buffer.alloc(1024 * 1024);
  let x = 0x12345678;
  for (let written = 0; written < bytes; written += block.length) {
    for (let i = 0; i < block.length; i += 4) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      block.writeInt32LE(x | 0, i);
    }
    const n = Math.min(block.length, bytes - written);
    if (!out.write(Buffer.from(block.subarray(0, n)))) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

function bootConfig(prefix: string, suffix: string): { text: string; offset: number } {
  const area = `${DEFAULT_KARGS}\n`.padEnd(KARGS_AREA_SIZE, '#');
  return { text: `${prefix}${area}${suffix}`, offset: Buffer.byteLength(prefix) };
}

export async function buildSyntheticLiveIso(opts: { fillerBytes: number; name?: string }): Promise<SyntheticIso> {
  const dir = tempDir('live-iso');
  const root = path.join(dir, 'root');
  for (const d of ['images/pxeboot', 'coreos', 'isolinux', 'EFI/fedora']) mkdirSync(path.join(root, d), { recursive: true });
  writeFileSync(path.join(root, 'images/ignition.img'), Buffer.alloc(IGNITION_AREA_SIZE));
  await writeFiller(path.join(root, 'images/pxeboot/rootfs.img'), opts.fillerBytes);
  // Stand-ins for the live kernel and initrd, which PXE boot fetches by URL.
  writeFileSync(path.join(root, 'images/pxeboot/vmlinuz'), Buffer.from('landfall synthetic kernel\n'.repeat(100)));
  writeFileSync(path.join(root, 'images/pxeboot/initrd.img'), Buffer.from('landfall synthetic initrd\n'.repeat(200)));
  const isolinux = bootConfig('label linux\n  kernel /images/pxeboot/vmlinuz\n  append initrd=/images/pxeboot/initrd.img,/images/ignition.img ', '\n');
  const grub = bootConfig("menuentry 'Landfall synthetic live' {\n  linux /images/pxeboot/vmlinuz ", '\n  initrd /images/pxeboot/initrd.img /images/ignition.img\n}\n');
  writeFileSync(path.join(root, 'isolinux/isolinux.cfg'), isolinux.text);
  writeFileSync(path.join(root, 'EFI/fedora/grub.cfg'), grub.text);
  writeFileSync(
    path.join(root, 'coreos/kargs.json'),
    JSON.stringify(
      {
        default: DEFAULT_KARGS,
        files: [
          { path: 'EFI/fedora/grub.cfg', offset: grub.offset },
          { path: 'isolinux/isolinux.cfg', offset: isolinux.offset },
        ],
        size: KARGS_AREA_SIZE,
      },
      null,
      2,
    ),
  );
  const iso = path.join(dir, opts.name ?? 'live.iso');
  execFileSync('xorriso', ['-as', 'mkisofs', '-quiet', '-o', iso, '-V', 'LANDFALL_TEST', '-R', root], { stdio: ['ignore', 'ignore', 'pipe'] });

  // Where xorriso put the embed area, independently of Landfall's ISO reader.
  const report = execFileSync('xorriso', ['-indev', iso, '-find', '/images/ignition.img', '-exec', 'report_lba'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const m = /File data lba:\s*\d+\s*,\s*(\d+)\s*,\s*\d+\s*,\s*(\d+)\s*,\s*'\/images\/ignition\.img'/.exec(report);
  if (!m) throw new Error(`xorriso did not report /images/ignition.img:\n${report}`);
  const ignition = { offset: Number(m[1]) * 2048, length: Number(m[2]) };

  const header = Buffer.alloc(24);
  header.write('coreiso+', 0, 'ascii');
  header.writeBigUInt64LE(BigInt(ignition.offset), 8);
  header.writeBigUInt64LE(BigInt(ignition.length), 16);
  const fd = openSync(iso, 'r+');
  try {
    writeSync(fd, header, 0, 24, 32768 - 24);
  } finally {
    closeSync(fd);
  }
  return { path: iso, size: statSync(iso).size, ignition };
}
