/**
 * Installs Landfall's own discovery OS to a disk, the way `coreos-installer
 * install` installs Fedora CoreOS: what the install step runs on a host
 * booted from Landfall's discovery OS, which has no coreos-installer.
 *
 * The "installed OS" is the same kernel, initrd and rootfs the host booted,
 * started from the disk with `landfall.installed=1` and a configuration
 * initrd holding the host's role Ignition. Disk layout (MBR, 512-byte sectors):
 *
 *   LBA 0          GRUB's boot.img (440 bytes of boot code), disk signature,
 *                  one partition entry, 0x55AA
 *   LBA 1…2047     GRUB's core.img (i386-pc, built by scripts/build-discovery-os.sh
 *                  with its modules and a config that reads the boot
 *                  configuration below), in the gap before the first partition
 *   partition 1    from LBA 2048, type 0xda (non-file-system data), active
 *                  (what BIOS boots); no file system, every part at a fixed sector:
 *     +0           grub.cfg (4 KiB of text): `linux` and `initrd` by GRUB
 *                  block lists, kernel arguments with landfall.installed=1
 *     +8           landfall-disk.json (4 KiB): what was written where, with sha256s
 *     +1 MiB       vmlinuz, initrd.img, rootfs.img, each from a 1 MiB boundary
 *     then         the configuration initrd (a gzip'd newc cpio, CONFIG_AREA_BYTES):
 *                  /config.ign (the role Ignition), /etc/landfall/installed.json,
 *                  /etc/landfall/agent.env and the static network keyfiles, as
 *                  coreos-installer --copy-network copies them
 *   partition 2    (when the image has one) the EFI system partition, type 0xef:
 *                  a 4 MiB FAT with an x86_64-efi GRUB whose built-in config is
 *                  core.img's, so UEFI boots the same grub.cfg from partition 1
 *
 * GRUB loads the three images and the configuration as initrds; /init then
 * finds the rootfs already unpacked, applies the role Ignition and starts the
 * first-boot reporter instead of the agent (discovery-os/init, first-boot.ts).
 * The OS still runs from RAM: the disk holds no root file system.
 *
 * Everything is written with plain positioned writes, fsync'd, then read back
 * and compared by sha256 before the caller reboots.
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { S_IFDIR, S_IFREG, newcArchive, type CpioEntry } from '../../discovery-os/cpio';

export const SECTOR = 512;
export const MIB = 1024 * 1024;
/** The first partition starts here (1 MiB), which leaves 2047 sectors for core.img. */
export const PARTITION_START_LBA = 2048;
/** grub.cfg's block list reads this many sectors. */
export const GRUB_CFG_SECTORS = 8;
export const MANIFEST_SECTOR = GRUB_CFG_SECTORS;
export const MANIFEST_SECTORS = 8;
export const CONFIG_AREA_BYTES = MIB;
/** MBR partition type "Non-FS data": the partition holds images at fixed sectors, no file system. */
export const PARTITION_TYPE = 0xda;

export interface DiskImages {
  /** GRUB's boot.img (the first 440 bytes are used). */
  bootImg: Buffer;
  /** GRUB's core.img (i386-pc), written from LBA 1. */
  coreImg: Buffer;
  kernel: Buffer;
  initrd: Buffer;
  rootfs: Buffer;
  /** The configuration initrd (configInitrd()). */
  config: Buffer;
  /** The EFI system partition (a FAT image with GRUB's BOOTX64.EFI), written as partition 2 when present. */
  esp?: Buffer;
}

export interface PartPlacement {
  name: 'vmlinuz' | 'initrd.img' | 'rootfs.img' | 'config.img';
  /** Sectors from the partition's start. */
  sector: number;
  sectors: number;
  bytes: number;
  sha256: string;
}

export interface DiskPlan {
  signature: number;
  partitionStartLba: number;
  partitionSectors: number;
  parts: PartPlacement[];
  /** The EFI system partition, partition 2: absolute LBA and length. */
  esp?: { startLba: number; sectors: number; bytes: number; sha256: string };
  kernelArguments: string;
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const sectorsOf = (bytes: number) => Math.ceil(bytes / SECTOR);
const alignMib = (sectors: number) => Math.ceil(sectors / (MIB / SECTOR)) * (MIB / SECTOR);

/** Where each part goes: from 1 MiB into the partition, each on a 1 MiB boundary. */
export function planDisk(images: Pick<DiskImages, 'kernel' | 'initrd' | 'rootfs' | 'config' | 'esp'>, kernelArguments: string, signature: number): DiskPlan {
  if (images.config.length > CONFIG_AREA_BYTES) throw new Error(`the configuration (${images.config.length} bytes) is larger than its ${CONFIG_AREA_BYTES}-byte area`);
  const parts: PartPlacement[] = [];
  let sector = MIB / SECTOR;
  for (const [name, data, room] of [
    ['vmlinuz', images.kernel, 0],
    ['initrd.img', images.initrd, 0],
    ['rootfs.img', images.rootfs, 0],
    ['config.img', images.config, CONFIG_AREA_BYTES],
  ] as const) {
    const sectors = Math.max(sectorsOf(data.length), room / SECTOR);
    parts.push({ name, sector, sectors, bytes: data.length, sha256: sha256(data) });
    sector = alignMib(sector + sectors);
  }
  const esp = images.esp ? { startLba: alignMib(PARTITION_START_LBA + sector), sectors: sectorsOf(images.esp.length), bytes: images.esp.length, sha256: sha256(images.esp) } : undefined;
  return { signature, partitionStartLba: PARTITION_START_LBA, partitionSectors: sector, parts, ...(esp ? { esp } : {}), kernelArguments };
}

/** The MBR: GRUB's boot code, the disk signature, the active partition and the ESP if any (CHS fields say "use LBA"). */
export function masterBootRecord(bootImg: Buffer, plan: DiskPlan): Buffer {
  if (bootImg.length < 440) throw new Error(`boot.img has ${bootImg.length} bytes, expected 512`);
  const mbr = Buffer.alloc(SECTOR);
  bootImg.copy(mbr, 0, 0, 440);
  mbr.writeUInt32LE(plan.signature >>> 0, 440);
  const e = 446;
  mbr[e] = 0x80;
  Buffer.from([0xfe, 0xff, 0xff]).copy(mbr, e + 1);
  mbr[e + 4] = PARTITION_TYPE;
  Buffer.from([0xfe, 0xff, 0xff]).copy(mbr, e + 5);
  mbr.writeUInt32LE(plan.partitionStartLba, e + 8);
  mbr.writeUInt32LE(plan.partitionSectors, e + 12);
  if (plan.esp) {
    const f = e + 16;
    Buffer.from([0xfe, 0xff, 0xff]).copy(mbr, f + 1);
    mbr[f + 4] = 0xef;
    Buffer.from([0xfe, 0xff, 0xff]).copy(mbr, f + 5);
    mbr.writeUInt32LE(plan.esp.startLba, f + 8);
    mbr.writeUInt32LE(plan.esp.sectors, f + 12);
  }
  mbr[510] = 0x55;
  mbr[511] = 0xaa;
  return mbr;
}

/**
 * The boot configuration GRUB's core.img reads by block list from the
 * partition's first sectors. `lfdisk` is set by core.img's built-in config to
 * the disk GRUB was loaded from. Padded to its 4 KiB with a comment line.
 */
export function grubConfig(plan: DiskPlan): Buffer {
  const at = (name: PartPlacement['name']) => {
    const p = plan.parts.find((x) => x.name === name)!;
    return `(\${lfdisk},msdos1)${p.sector}+${p.sectors}`;
  };
  const text = [
    '# Landfall installed OS: written by the Landfall agent (agent/executors/landfall-disk.ts)',
    'echo "landfall: booting the installed OS from ${lfdisk}"',
    `linux ${at('vmlinuz')} ${plan.kernelArguments}`,
    `initrd ${at('initrd.img')} ${at('rootfs.img')} ${at('config.img')}`,
    'boot',
    '',
  ].join('\n');
  const size = GRUB_CFG_SECTORS * SECTOR;
  if (text.length + 2 > size) throw new Error('the boot configuration does not fit its area');
  return Buffer.concat([Buffer.from(text), Buffer.from('#'.repeat(size - text.length - 1) + '\n')]);
}

/** What the installed OS needs besides its images: the role Ignition, who it is, how to reach the service, its network. */
export function configInitrd(files: { ignition: Buffer; installed: Record<string, unknown>; agentEnv: Buffer; networkKeyfiles: Array<{ name: string; contents: Buffer }> }, mtime: number): Buffer {
  const dir = (name: string, mode = 0o755): CpioEntry => ({ name, mode: S_IFDIR | mode, data: Buffer.alloc(0) });
  const file = (name: string, data: Buffer, mode = 0o644): CpioEntry => ({ name, mode: S_IFREG | mode, data });
  const entries: CpioEntry[] = [
    file('config.ign', files.ignition, 0o600),
    dir('etc'),
    dir('etc/landfall'),
    file('etc/landfall/installed.json', Buffer.from(JSON.stringify(files.installed, null, 2) + '\n')),
    file('etc/landfall/agent.env', files.agentEnv, 0o600),
  ];
  if (files.networkKeyfiles.length) {
    entries.push(dir('etc/NetworkManager'), dir('etc/NetworkManager/system-connections', 0o700));
    for (const k of files.networkKeyfiles) {
      if (!/^[A-Za-z0-9._@-]+$/.test(k.name)) throw new Error(`bad keyfile name ${k.name}`);
      entries.push(file(`etc/NetworkManager/system-connections/${k.name}`, k.contents, 0o600));
    }
  }
  return gzipSync(newcArchive(entries, mtime), { level: 9 });
}

/** The size of a disk or image file: a block device's from sysfs, a file's from stat. */
export async function deviceBytes(device: string): Promise<number> {
  const st = await fs.stat(device);
  if (st.isFile()) return st.size;
  const real = await fs.realpath(device);
  const name = real.split('/').pop()!;
  const sectors = Number((await fs.readFile(`/sys/class/block/${name}/size`, 'utf8')).trim());
  if (!(sectors > 0)) throw new Error(`cannot tell the size of ${device}`);
  return sectors * SECTOR;
}

/**
 * Writes the whole layout to `device` (a disk or an image file), syncs, reads it back and checks every part.
 * With `dropCaches` (the installing host, root) the kernel's page cache is dropped first, so the read
 * comes from the disk rather than from the memory the write went through.
 */
export async function writeLandfallDisk(device: string, images: DiskImages, plan: DiskPlan, onProgress?: (percent: number) => void, opts: { dropCaches?: boolean } = {}): Promise<void> {
  const total = await deviceBytes(device);
  const end = (plan.esp ? plan.esp.startLba + plan.esp.sectors : plan.partitionStartLba + plan.partitionSectors) * SECTOR;
  if (end > total) throw new Error(`${device} has ${total} bytes; the installed OS needs ${end}`);
  if (images.coreImg.length > (PARTITION_START_LBA - 1) * SECTOR) throw new Error(`core.img (${images.coreImg.length} bytes) does not fit before the first partition`);
  const partOffset = plan.partitionStartLba * SECTOR;
  const dataOf: Record<PartPlacement['name'], Buffer> = { 'vmlinuz': images.kernel, 'initrd.img': images.initrd, 'rootfs.img': images.rootfs, 'config.img': images.config };
  const fh = await fs.open(device, 'r+');
  try {
    const write = async (data: Buffer, offset: number) => {
      for (let done = 0; done < data.length; done += 4 * MIB) await fh.write(data, done, Math.min(4 * MIB, data.length - done), offset + done);
    };
    // Old signatures first: a GPT's backup header at the end of the disk, anything in the gap.
    const tail = Math.min(MIB, total - end);
    if (tail > 0) await write(Buffer.alloc(tail), total - tail);
    await write(Buffer.alloc(partOffset), 0);
    let written = 0;
    const all = plan.parts.reduce((n, p) => n + p.sectors * SECTOR, 0);
    for (const p of plan.parts) {
      const data = dataOf[p.name];
      await write(Buffer.concat([data, Buffer.alloc(p.sectors * SECTOR - data.length)]), partOffset + p.sector * SECTOR);
      written += p.sectors * SECTOR;
      onProgress?.(Math.round((written / all) * 100));
    }
    if (plan.esp && images.esp) await write(images.esp, plan.esp.startLba * SECTOR);
    await write(Buffer.concat([grubConfig(plan), manifest(plan)]), partOffset);
    await write(images.coreImg, SECTOR);
    // The MBR last: until it is there the disk is not bootable, never half-bootable.
    await fh.sync();
    await write(masterBootRecord(images.bootImg, plan), 0);
    await fh.sync();
    if (opts.dropCaches) await fs.writeFile('/proc/sys/vm/drop_caches', '1\n').catch(() => undefined);
    for (const p of plan.parts) {
      const back = Buffer.alloc(p.bytes);
      await fh.read(back, 0, p.bytes, partOffset + p.sector * SECTOR);
      if (sha256(back) !== p.sha256) throw new Error(`${p.name} read back from ${device} differs from what was written`);
    }
    if (plan.esp) {
      const back = Buffer.alloc(plan.esp.bytes);
      await fh.read(back, 0, back.length, plan.esp.startLba * SECTOR);
      if (sha256(back) !== plan.esp.sha256) throw new Error(`the EFI system partition read back from ${device} differs from what was written`);
    }
  } finally {
    await fh.close();
  }
}

function manifest(plan: DiskPlan): Buffer {
  const text = JSON.stringify({ format: 'landfall-disk/1', ...plan, signature: `0x${(plan.signature >>> 0).toString(16).padStart(8, '0')}` }) + '\n';
  const size = MANIFEST_SECTORS * SECTOR;
  if (text.length > size) throw new Error('the disk manifest does not fit its area');
  return Buffer.concat([Buffer.from(text), Buffer.alloc(size - text.length)]);
}

/** Where the discovery OS keeps what an install needs besides the running images (scripts/build-discovery-os.sh). */
export const INSTALLED_OS_DIR = '/usr/lib/landfall/installed-os';

/** Live-boot arguments that must not follow the host to its disk (coreos-installer drops them too). */
const LIVE_ONLY_KARG = /^(BOOT_IMAGE|initrd|coreos\.liveiso|coreos\.live\.rootfs_url|ignition\.[a-z_.]+|landfall\.installed)(=|$)/;

export function installedKernelArguments(cmdline: string): string {
  const kept = cmdline.trim().split(/\s+/).filter((a) => a && !LIVE_ONLY_KARG.test(a));
  return ['landfall.installed=1', ...kept].join(' ');
}

export interface InstallSources {
  /** This boot's /proc/cmdline: where the images came from (coreos.liveiso or coreos.live.rootfs_url). */
  cmdline: string;
  readFile(p: string): Promise<Buffer>;
  /** Mounts the ISO 9660 volume with this label read-only and returns the mount point, or undefined when there is none. */
  mountLiveIso(label: string): Promise<{ dir: string; unmount(): Promise<void> } | undefined>;
  fetchBytes(url: string): Promise<Buffer>;
  listDir(p: string): Promise<string[]>;
}

const karg = (cmdline: string, name: string) => cmdline.split(/\s+/).filter((a) => a.startsWith(`${name}=`)).map((a) => a.slice(name.length + 1)).pop();

/**
 * The kernel, initrd and rootfs this host booted: from the live ISO it booted
 * (coreos.liveiso=LABEL), or from the boot artifacts beside its
 * coreos.live.rootfs_url (minimal ISO, iPXE). The rootfs must have the sha256
 * built into the running initrd, and the kernel the one built into the rootfs.
 */
export async function bootedImages(src: InstallSources): Promise<{ kernel: Buffer; initrd: Buffer; rootfs: Buffer; from: string }> {
  const label = karg(src.cmdline, 'coreos.liveiso');
  const url = karg(src.cmdline, 'coreos.live.rootfs_url');
  let got: { kernel: Buffer; initrd: Buffer; rootfs: Buffer; from: string } | undefined;
  if (label) {
    const m = await src.mountLiveIso(label);
    if (m) {
      try {
        const f = (n: string) => src.readFile(`${m.dir}/images/pxeboot/${n}`);
        got = { kernel: await f('vmlinuz'), initrd: await f('initrd.img'), rootfs: await f('rootfs.img'), from: `the live ISO ${label}` };
      } finally {
        await m.unmount();
      }
    }
  }
  if (!got && url && /^https?:\/\/.+\/rootfs\.img$/.test(url)) {
    const base = url.slice(0, -'rootfs.img'.length);
    got = { kernel: await src.fetchBytes(`${base}vmlinuz`), initrd: await src.fetchBytes(`${base}initrd.img`), rootfs: await src.fetchBytes(url), from: base };
  }
  if (!got) throw new Error('cannot find the images this host booted: no live ISO (coreos.liveiso) and no coreos.live.rootfs_url on the kernel command line');
  const want = async (p: string) => (await src.readFile(p)).toString().trim().split(/\s+/)[0];
  if (sha256(got.rootfs) !== (await want('/etc/landfall/rootfs.sha256'))) throw new Error(`the rootfs from ${got.from} is not the one this host booted (sha256 differs)`);
  if (sha256(got.kernel) !== (await want(`${INSTALLED_OS_DIR}/vmlinuz.sha256`))) throw new Error(`the kernel from ${got.from} is not the one this image was built with (sha256 differs)`);
  return got;
}

export interface InstallRequest {
  device: string;
  ignition: Buffer;
  args: Record<string, unknown>;
  hostId: string;
  now: Date;
}

/** The whole install: images, configuration, layout, write. Returns the plan that was written. */
export async function installLandfallOs(req: InstallRequest, src: InstallSources, onProgress?: (percent: number) => void): Promise<DiskPlan & { from: string }> {
  const images = await bootedImages(src);
  const nmDir = '/etc/NetworkManager/system-connections';
  const keyfiles = await Promise.all((await src.listDir(nmDir)).filter((n) => n.endsWith('.nmconnection')).map(async (name) => ({ name, contents: await src.readFile(`${nmDir}/${name}`) })));
  const installed = {
    host_id: String(req.args.host_id ?? req.hostId),
    infra_env_id: String(req.args.infra_env_id ?? ''),
    cluster_id: String(req.args.cluster_id ?? ''),
    role: String(req.args.role ?? 'master'),
    control_plane_count: Number(req.args.control_plane_count ?? 3),
    // Day 2: the installed OS reports a day-2 worker's stages (src/domain/install-stages.ts).
    ...(req.args.join_existing_cluster === true ? { join_existing_cluster: true } : {}),
    boot_device: req.device,
    installed_at: req.now.toISOString(),
    images_from: images.from,
  };
  const config = configInitrd({ ignition: req.ignition, installed, agentEnv: await src.readFile('/etc/landfall/agent.env'), networkKeyfiles: keyfiles }, Math.floor(req.now.getTime() / 1000));
  const esp = await src.readFile(`${INSTALLED_OS_DIR}/esp.img`).catch(() => undefined);
  const all: DiskImages = { bootImg: await src.readFile(`${INSTALLED_OS_DIR}/boot.img`), coreImg: await src.readFile(`${INSTALLED_OS_DIR}/core.img`), ...images, config, ...(esp ? { esp } : {}) };
  // The disk signature names this install: the first 4 bytes of the host id.
  const signature = parseInt(installed.host_id.replace(/-/g, '').slice(0, 8), 16) || 0x4c464400;
  const plan = planDisk(all, installedKernelArguments(src.cmdline), signature);
  await writeLandfallDisk(req.device, all, plan, onProgress, { dropCaches: true });
  return { ...plan, from: images.from };
}

/** The running system as InstallSources: /proc/cmdline, busybox findfs and mount, fetch. */
export function systemInstallSources(run: (cmd: string, args: string[]) => Promise<string>, cmdline: string): InstallSources {
  return {
    cmdline,
    readFile: (p) => fs.readFile(p),
    listDir: (p) => fs.readdir(p).catch(() => [] as string[]),
    async mountLiveIso(label) {
      const dev = (await run('findfs', [`LABEL=${label}`]).catch(() => '')).trim();
      if (!dev) return undefined;
      const dir = '/run/landfall/install-media';
      await fs.mkdir(dir, { recursive: true });
      await run('mount', ['-t', 'iso9660', '-o', 'ro', dev, dir]);
      return { dir, unmount: async () => void (await run('umount', [dir]).catch(() => '')) };
    },
    async fetchBytes(url) {
      const res = await fetch(url, { signal: AbortSignal.timeout(300_000) });
      if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status}`);
      return Buffer.from(await res.arrayBuffer());
    },
  };
}
