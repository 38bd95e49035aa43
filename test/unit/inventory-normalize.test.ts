import { chooseInstallationDisk, diskEligibility, humanBytes, InventoryShapeError, normalizeInventory, withDiskEligibility } from '../../src/domain/inventory';
import type { Disk } from '../../agent/types';

/** An inventory shaped as the upstream Go agent sends it: zero values left out, empty lists as null. */
const goShaped = {
  hostname: 'master-0',
  cpu: { count: 8, architecture: 'x86_64' },
  memory: { physical_bytes: 17179869184 },
  disks: [
    { id: '/dev/disk/by-id/virtio-SER1', name: 'vda', path: '/dev/vda', drive_type: 'HDD', size_bytes: 128849018880 },
    { name: 'sr0', path: '/dev/sr0', drive_type: 'ODD', size_bytes: 1031798784, removable: true, is_installation_media: true, installation_eligibility: { not_eligible_reasons: ['Disk is removable'] } },
  ],
  interfaces: [
    { name: 'lo', mac_address: '', ipv4_addresses: ['127.0.0.1/8'], ipv6_addresses: ['::1/128'], flags: ['up', 'loopback'] },
    { name: 'eth0', mac_address: '52:54:00:aa:bb:cc', ipv4_addresses: ['10.77.13.12/24'], ipv6_addresses: null, flags: null, has_carrier: true },
    { name: 'eth1', mac_address: '52:54:00:aa:bb:cd', ipv4_addresses: null },
  ],
  routes: null,
  system_vendor: { manufacturer: 'QEMU', virtual: true },
};

describe('normalizeInventory', () => {
  const inv = normalizeInventory(goShaped);

  it('fills null and absent lists and sections with their empty meaning', () => {
    expect(inv.routes).toEqual([]);
    expect(inv.interfaces.find((i) => i.name === 'eth1')!.ipv4_addresses).toEqual([]);
    expect(inv.interfaces.find((i) => i.name === 'eth0')!.ipv6_addresses).toEqual([]);
    expect(inv.memory.usable_bytes).toBe(0);
    expect(inv.cpu.model_name).toBe('');
    expect(inv.boot.current_boot_mode).toBe('bios');
    expect(inv.system_vendor.product_name).toBe('');
  });

  it('drops the loopback interface and loopback addresses', () => {
    expect(inv.interfaces.map((i) => i.name)).toEqual(['eth0', 'eth1']);
    expect(JSON.stringify(inv)).not.toContain('127.0.0.1');
  });

  it('keeps what it does not know and what the agent said', () => {
    expect(inv.hostname).toBe('master-0');
    expect(inv.disks[1]!.installation_eligibility.not_eligible_reasons).toEqual(['Disk is removable']);
    expect((normalizeInventory({ ...goShaped, gpus: [{ address: '0000:00:02.0' }] }) as unknown as { gpus: unknown }).gpus).toEqual([{ address: '0000:00:02.0' }]);
  });

  it('accepts an empty object as an inventory with nothing in it', () => {
    const empty = normalizeInventory({});
    expect(empty.disks).toEqual([]);
    expect(empty.interfaces).toEqual([]);
    expect(empty.cpu.count).toBe(0);
  });

  it('names the field of the wrong type', () => {
    expect(() => normalizeInventory({ disks: 'sda' })).toThrow(new InventoryShapeError('disks', 'an array'));
    expect(() => normalizeInventory({ interfaces: [{ ipv4_addresses: [7] }] })).toThrow('interfaces[0].ipv4_addresses[0] must be a string');
    expect(() => normalizeInventory({ cpu: { count: '8' } })).toThrow('cpu.count must be a number');
    expect(() => normalizeInventory([])).toThrow(InventoryShapeError);
  });
});

describe('disk eligibility decided by the service', () => {
  const inv = normalizeInventory(goShaped);

  it('uses the role minimum and assisted-service wording', () => {
    const small = diskEligibility(inv.disks[0]!, 200);
    expect(small).toEqual({ eligible: false, not_eligible_reasons: ['Disk is too small (disk only has 129 GB, but 200 GB are required)'] });
    expect(diskEligibility(inv.disks[0]!, 100)).toEqual({ eligible: true, not_eligible_reasons: [] });
  });

  it('keeps the agent reasons and adds drive type and installation media', () => {
    const cd = diskEligibility(inv.disks[1]!, 100);
    expect(cd.eligible).toBe(false);
    expect(cd.not_eligible_reasons).toEqual([
      'Disk is removable',
      'Disk is too small (disk only has 1.0 GB, but 100 GB are required)',
      expect.stringMatching(/^Drive type is ODD, it must be one of HDD, SSD/),
      'Disk appears to be an ISO installation media (has partition with type iso9660)',
    ]);
  });

  it('replaces its own reasons when decided again (no pile-up) and returns the same object when nothing changed', () => {
    const once = withDiskEligibility(inv, 200);
    expect(once).not.toBe(inv);
    const again = withDiskEligibility(once, 200);
    expect(again).toBe(once);
    const relaxed = withDiskEligibility(once, 100);
    expect(relaxed.disks[0]!.installation_eligibility).toEqual({ eligible: true, not_eligible_reasons: [] });
    // The agent's own size rule (20 GB) is the service's to decide.
    const agentSaid: Disk = { ...inv.disks[0]!, installation_eligibility: { eligible: false, not_eligible_reasons: ['Disk is too small (disk only has 16 GB, but 20 GB are required)'] } };
    expect(diskEligibility(agentSaid, 100)).toEqual({ eligible: true, not_eligible_reasons: [] });
  });

  it('picks the chosen disk while eligible, else the first eligible one', () => {
    const decided = withDiskEligibility(inv, 100);
    expect(chooseInstallationDisk(decided, undefined)?.name).toBe('vda');
    expect(chooseInstallationDisk(decided, '/dev/sr0')?.name).toBe('vda');
    expect(chooseInstallationDisk(withDiskEligibility(inv, 500), undefined)).toBeUndefined();
  });

  it('formats sizes as go-humanize does', () => {
    expect(humanBytes(1031798784)).toBe('1.0 GB');
    expect(humanBytes(108984320)).toBe('109 MB');
    expect(humanBytes(120e9)).toBe('120 GB');
  });
});
