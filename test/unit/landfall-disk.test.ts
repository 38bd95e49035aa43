/**
 * The installed-OS writer of Landfall's discovery OS (agent/executors/landfall-disk.ts)
 * on an image file, and the first-boot reporter's stage rules (discovery-os/first-boot.ts).
 * The VM test (test/vm/vm-install.test.ts) boots what it writes.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { bootedImages, configInitrd, grubConfig, installedKernelArguments, masterBootRecord, planDisk, writeLandfallDisk, type InstallSources } from '../../agent/executors/landfall-disk';
import { parseEnvFile, playsController, remainingStages } from '../../discovery-os/first-boot';
import { tempDir } from '../support/services';

const haveSfdisk = spawnSync('sfdisk', ['--version'], { stdio: 'ignore' }).status === 0;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const images = () => ({
  bootImg: Buffer.alloc(512, 0x90),
  coreImg: Buffer.alloc(100_000, 0xc0),
  kernel: Buffer.alloc(3_000_001, 1),
  initrd: Buffer.alloc(1_500_000, 2),
  rootfs: Buffer.alloc(5_000_000, 3),
  config: configInitrd({ ignition: Buffer.from('{"ignition":{"version":"3.4.0"}}'), installed: { role: 'master' }, agentEnv: Buffer.from('LANDFALL_SERVICE_URL=http://x\n'), networkKeyfiles: [{ name: 'eth1.nmconnection', contents: Buffer.from('[connection]\n') }] }, 0),
});

describe('landfall-disk: the installed-OS layout', () => {
  it('places every part on a 1 MiB boundary from 1 MiB into the partition, the configuration in its 1 MiB area', () => {
    const plan = planDisk(images(), 'landfall.installed=1', 0x12345678);
    expect(plan.parts.map((p) => [p.name, p.sector])).toEqual([['vmlinuz', 2048], ['initrd.img', 2048 + 6144], ['rootfs.img', 2048 + 6144 + 4096], ['config.img', 2048 + 6144 + 4096 + 10240]]);
    expect(plan.parts[3]!.sectors).toBe(2048);
    expect(plan.partitionSectors).toBe(plan.parts[3]!.sector + 2048);
    expect(() => planDisk({ ...images(), config: Buffer.alloc(1024 * 1024 + 1) }, '', 1)).toThrow(/larger than its 1048576-byte area/);
  });

  it('writes an MBR with GRUB\'s boot code, the signature and one active 0xda partition', () => {
    const plan = planDisk(images(), '', 0x12345678);
    const mbr = masterBootRecord(Buffer.alloc(512, 0x90), plan);
    expect(mbr.subarray(0, 440).every((b) => b === 0x90)).toBe(true);
    expect(mbr.readUInt32LE(440)).toBe(0x12345678);
    expect([mbr[446], mbr[450], mbr.readUInt32LE(454), mbr.readUInt32LE(458)]).toEqual([0x80, 0xda, 2048, plan.partitionSectors]);
    expect([mbr[510], mbr[511]]).toEqual([0x55, 0xaa]);
  });

  it('adds the EFI system partition as partition 2, after partition 1, when the image has one', async () => {
    const esp = Buffer.alloc(4 * 1024 * 1024, 0xef);
    const plan = planDisk({ ...images(), esp }, '', 1);
    expect(plan.esp).toMatchObject({ startLba: 2048 + plan.partitionSectors, sectors: 8192, bytes: esp.length });
    const mbr = masterBootRecord(Buffer.alloc(512), plan);
    expect([mbr[462], mbr[466], mbr.readUInt32LE(470), mbr.readUInt32LE(474)]).toEqual([0x00, 0xef, plan.esp!.startLba, 8192]);
    const disk = path.join(tempDir('landfall-disk'), 'esp.img');
    writeFileSync(disk, Buffer.alloc(0));
    truncateSync(disk, 64 * 1024 * 1024);
    await writeLandfallDisk(disk, { ...images(), esp }, plan);
    const raw = readFileSync(disk);
    expect(raw.subarray(plan.esp!.startLba * 512, plan.esp!.startLba * 512 + esp.length).equals(esp)).toBe(true);
  });

  it('tells GRUB where each image is by block list, in exactly 4 KiB', () => {
    const plan = planDisk(images(), 'landfall.installed=1 console=ttyS0', 1);
    const cfg = grubConfig(plan);
    expect(cfg.length).toBe(4096);
    const text = cfg.toString();
    expect(text).toContain('linux (${lfdisk},msdos1)2048+5860 landfall.installed=1 console=ttyS0\n');
    expect(text).toMatch(/^initrd \(\$\{lfdisk\},msdos1\)8192\+2930 \(\$\{lfdisk\},msdos1\)12288\+9766 \(\$\{lfdisk\},msdos1\)22528\+2048$/m);
  });

  it('keeps the user\'s kernel arguments and drops the live-boot ones', () => {
    expect(installedKernelArguments('BOOT_IMAGE=/images/pxeboot/vmlinuz initrd=/a,/b coreos.liveiso=landfall-dos-2 ignition.firstboot ignition.platform.id=metal console=tty0 console=ttyS0,115200n8 landfall.test=vm coreos.live.rootfs_url=http://x/rootfs.img'))
      .toBe('landfall.installed=1 console=tty0 console=ttyS0,115200n8 landfall.test=vm');
  });

  it('writes an image file with every part where the plan says', async () => {
    const disk = path.join(tempDir('landfall-disk'), 'disk.img');
    writeFileSync(disk, Buffer.alloc(0));
    truncateSync(disk, 64 * 1024 * 1024);
    const all = images();
    const plan = planDisk(all, 'landfall.installed=1', 0xabcdef01);
    const progress: number[] = [];
    await writeLandfallDisk(disk, all, plan, (p) => progress.push(p));
    expect(progress.at(-1)).toBe(100);
    const raw = readFileSync(disk);
    for (const p of plan.parts) expect(sha(raw.subarray((2048 + p.sector) * 512, (2048 + p.sector) * 512 + p.bytes))).toBe(p.sha256);
    expect(raw.subarray(512, 512 + all.coreImg.length).equals(all.coreImg)).toBe(true);
    const manifest = JSON.parse(raw.subarray(2048 * 512 + 4096, 2048 * 512 + 8192).toString().replace(/\0+$/, ''));
    expect(manifest).toMatchObject({ format: 'landfall-disk/1', signature: '0xabcdef01', partitionStartLba: 2048 });
    // The configuration initrd is a gzip'd newc cpio starting with the role Ignition.
    const cfg = gunzipSync(raw.subarray((2048 + plan.parts[3]!.sector) * 512, (2048 + plan.parts[3]!.sector) * 512 + plan.parts[3]!.bytes));
    expect(cfg.toString('latin1')).toMatch(/^070701.{104}config\.ign\0/);
    expect(cfg.toString('latin1')).toContain('etc/NetworkManager/system-connections/eth1.nmconnection');
  });

  (haveSfdisk ? it : it.skip)(`is a partition table sfdisk reads${haveSfdisk ? '' : ' (skipped: sfdisk, Debian fdisk, is not installed)'}`, async () => {
    const disk = path.join(tempDir('landfall-disk'), 'disk.img');
    writeFileSync(disk, Buffer.alloc(0));
    truncateSync(disk, 64 * 1024 * 1024);
    const plan = planDisk(images(), '', 0xabcdef01);
    await writeLandfallDisk(disk, images(), plan);
    expect(execFileSync('sfdisk', ['-d', disk], { encoding: 'utf8' })).toMatch(new RegExp(`label-id: 0xabcdef01[\\s\\S]*disk\\.img1 : start=\\s*2048, size=\\s*${plan.partitionSectors}, type=da, bootable`));
  });

  it('refuses a disk too small for the layout, and writes nothing', async () => {
    const disk = path.join(tempDir('landfall-disk'), 'small.img');
    writeFileSync(disk, Buffer.alloc(4 * 1024 * 1024));
    await expect(writeLandfallDisk(disk, images(), planDisk(images(), '', 1), undefined)).rejects.toThrow(/has 4194304 bytes; the installed OS needs/);
    expect(readFileSync(disk).every((b) => b === 0)).toBe(true);
  });

  it('takes the images from the live ISO the host booted, and refuses a rootfs or kernel of another build', async () => {
    const kernel = Buffer.from('kernel');
    const rootfs = Buffer.from('rootfs');
    const files: Record<string, Buffer> = {
      '/iso/images/pxeboot/vmlinuz': kernel,
      '/iso/images/pxeboot/initrd.img': Buffer.from('initrd'),
      '/iso/images/pxeboot/rootfs.img': rootfs,
      '/etc/landfall/rootfs.sha256': Buffer.from(`${sha(rootfs)}\n`),
      '/usr/lib/landfall/installed-os/vmlinuz.sha256': Buffer.from(`${sha(kernel)}\n`),
    };
    const unmounted: string[] = [];
    const src: InstallSources = {
      cmdline: 'coreos.liveiso=landfall-dos-2 console=ttyS0',
      readFile: async (p) => files[p] ?? Promise.reject(new Error(`no ${p}`)),
      mountLiveIso: async (label) => (label === 'landfall-dos-2' ? { dir: '/iso', unmount: async () => void unmounted.push(label) } : undefined),
      fetchBytes: async () => Promise.reject(new Error('no network')),
      listDir: async () => [],
    };
    await expect(bootedImages(src)).resolves.toMatchObject({ kernel, rootfs, from: 'the live ISO landfall-dos-2' });
    expect(unmounted).toEqual(['landfall-dos-2']);
    files['/iso/images/pxeboot/rootfs.img'] = Buffer.from('another rootfs');
    await expect(bootedImages(src)).rejects.toThrow(/rootfs from the live ISO landfall-dos-2 is not the one this host booted/);
    await expect(bootedImages({ ...src, cmdline: 'console=ttyS0' })).rejects.toThrow(/no live ISO \(coreos\.liveiso\) and no coreos\.live\.rootfs_url/);
  });
});

describe('first-boot: the stages the installed OS reports', () => {
  it('reports what follows Rebooting for the host\'s role, resuming after what the service has', () => {
    expect(remainingStages({ role: 'bootstrap', control_plane_count: 1 }, 'Rebooting')).toEqual(['Joined', 'Done']);
    expect(remainingStages({ role: 'master', control_plane_count: 3 }, 'Rebooting')).toEqual(['Configuring', 'Joined', 'Done']);
    expect(remainingStages({ role: 'bootstrap', control_plane_count: 3 }, 'Rebooting')).toEqual(['Configuring', 'Joined', 'Done']);
    expect(remainingStages({ role: 'worker', control_plane_count: 3 }, 'Rebooting')).toEqual(['Waiting for ignition', 'Configuring', 'Joined', 'Done']);
    // Day 2: a worker joining a running cluster, also one of a single-node cluster (its stages come after Rebooting too).
    expect(remainingStages({ role: 'worker', control_plane_count: 1, join_existing_cluster: true }, 'Rebooting')).toEqual(['Waiting for ignition', 'Configuring', 'Joined', 'Done']);
    // Rebooted again after reporting Configuring: the rest only; after Done: nothing.
    expect(remainingStages({ role: 'master', control_plane_count: 3 }, 'Configuring')).toEqual(['Joined', 'Done']);
    expect(remainingStages({ role: 'master', control_plane_count: 3 }, 'Done')).toEqual([]);
    // A lost Rebooting report: still only what follows it.
    expect(remainingStages({ role: 'master', control_plane_count: 3 }, 'Writing image to disk')).toEqual(['Configuring', 'Joined', 'Done']);
  });

  it('plays the controller only on the single node or the bootstrap host', () => {
    expect(playsController({ role: 'bootstrap', control_plane_count: 3 })).toBe(true);
    expect(playsController({ role: 'master', control_plane_count: 1 })).toBe(true);
    expect(playsController({ role: 'master', control_plane_count: 3 })).toBe(false);
    expect(playsController({ role: 'worker', control_plane_count: 1 })).toBe(false);
  });

  it('reads the agent\'s EnvironmentFile', () => {
    expect(parseEnvFile('LANDFALL_SERVICE_URL=http://10.0.2.100:1\n# c\nLANDFALL_AGENT_TOKEN=a.b=c\n\n')).toEqual({ LANDFALL_SERVICE_URL: 'http://10.0.2.100:1', LANDFALL_AGENT_TOKEN: 'a.b=c' });
  });
});
