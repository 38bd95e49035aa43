import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** `landfall inventory` must describe this machine as /proc, lsblk and ip do. */
const MAIN = path.resolve(__dirname, '../../dist/src/cli/main.js');
const AGENT = path.resolve(__dirname, '../../dist/agent/landfall-agent.js');

describe('landfall inventory on this machine', () => {
  const inv = JSON.parse(execFileSync(process.execPath, [MAIN, 'inventory'], { encoding: 'utf8' }));

  it('counts the CPUs /proc/cpuinfo lists', () => {
    const processors = (readFileSync('/proc/cpuinfo', 'utf8').match(/^processor\s*:/gm) ?? []).length;
    expect(inv.cpu.count).toBe(processors);
    expect(inv.cpu.architecture).toBe(process.arch === 'x64' ? 'x86_64' : 'aarch64');
  });

  it('reports MemTotal from /proc/meminfo', () => {
    const kb = Number(/^MemTotal:\s+(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'))![1]);
    expect(inv.memory.usable_bytes).toBe(kb * 1024);
  });

  it('lists the disks lsblk lists, with their sizes', () => {
    const lsblk = JSON.parse(execFileSync('lsblk', ['-J', '-b', '-d', '-o', 'NAME,SIZE,TYPE,RM'], { encoding: 'utf8' })).blockdevices.filter((d: { type: string }) => d.type === 'disk');
    expect(inv.disks.map((d: { name: string; size_bytes: number }) => [d.name, d.size_bytes])).toEqual(lsblk.map((d: { name: string; size: number }) => [d.name, Number(d.size)]));
    for (const d of inv.disks) expect(d.installation_eligibility.eligible).toBe(d.size_bytes >= 20e9 && !d.removable);
  });

  it('lists the NICs ip lists, with MAC, CIDR addresses and MTU', () => {
    const links = JSON.parse(execFileSync('ip', ['-j', 'addr'], { encoding: 'utf8' })).filter((l: { link_type: string }) => l.link_type !== 'loopback');
    expect(inv.interfaces.map((i: { name: string }) => i.name)).toEqual(links.map((l: { ifname: string }) => l.ifname));
    for (const l of links) {
      const nic = inv.interfaces.find((i: { name: string }) => i.name === l.ifname);
      expect(nic.mac_address).toBe(l.address);
      expect(nic.mtu).toBe(l.mtu);
      expect(nic.ipv4_addresses).toEqual(l.addr_info.filter((a: { family: string }) => a.family === 'inet').map((a: { local: string; prefixlen: number }) => `${a.local}/${a.prefixlen}`));
    }
  });

  it('is printed the same by the bundled agent, which runs with plain node', () => {
    const r = spawnSync(process.execPath, [AGENT, 'inventory'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    const fromAgent = JSON.parse(r.stdout);
    expect(fromAgent.cpu.count).toBe(inv.cpu.count);
    expect(fromAgent.disks.map((d: { name: string }) => d.name)).toEqual(inv.disks.map((d: { name: string }) => d.name));
  });
});
