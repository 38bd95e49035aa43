/**
 * The smallest inventory the service takes as a host's (one CPU count, one
 * memory size, one eligible disk, one NIC with an address in a /24): for tests
 * that need hosts with networks, not hardware detail. The MAC's last octet is
 * the address's, so hosts of one test have distinct NICs.
 */
export function smallInventory(name: string, ip: string, memGiB = 32): string {
  return JSON.stringify({
    hostname: name,
    cpu: { count: 8 },
    memory: { physical_bytes: memGiB * 1024 ** 3 },
    disks: [{ id: `/dev/disk/by-id/${name}`, name: 'sda', path: '/dev/sda', drive_type: 'SSD', size_bytes: 200e9 }],
    interfaces: [{ name: 'eth0', mac_address: `52:54:00:00:01:${ip.split('.')[3]}`, ipv4_addresses: [`${ip}/24`] }],
  });
}
