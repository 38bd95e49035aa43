/**
 * Real links between simulated hosts: one network namespace per host, each
 * joined by a veth pair to a bridge that lives in its own "switch" namespace.
 * Nothing is added to the root namespace, and every address is on the
 * project's own test hosts. Connectivity checks then run real ping/arping.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

async function ip(...args: string[]): Promise<string> {
  const { stdout } = await run('ip', args);
  return stdout;
}

export interface NetnsTopology {
  prefix: string;
  switchNs: string;
  hosts: Array<{ ns: string; ip: string; veth: string }>;
  cidr: string;
  /** Takes a host's link down (the "cut cable" fault). */
  cut(index: number): Promise<void>;
  destroy(): Promise<void>;
}

export async function netnsAvailable(): Promise<{ ok: boolean; reason?: string }> {
  if (process.getuid?.() !== 0) return { ok: false, reason: 'network namespaces need root' };
  try {
    await run('ip', ['-V']);
  } catch {
    return { ok: false, reason: 'iproute2 (the ip command) is not installed' };
  }
  const probe = `lfprobe${process.pid}`;
  try {
    await ip('netns', 'add', probe);
    await ip('netns', 'del', probe);
  } catch (err) {
    return { ok: false, reason: `cannot create network namespaces here: ${(err as Error).message.split('\n')[0]}` };
  }
  try {
    await run('ping', ['-V']);
  } catch {
    return { ok: false, reason: 'ping (iputils-ping) is not installed' };
  }
  return { ok: true };
}

/** Builds the topology; on any failure it removes what it made before rethrowing. */
export async function createTopology(count: number, opts: { prefix?: string; subnet?: string } = {}): Promise<NetnsTopology> {
  if (count > 200) throw new Error('netns mode is limited to 200 hosts');
  const prefix = opts.prefix ?? `lf${process.pid % 10000}`;
  const subnet = opts.subnet ?? '192.168.127';
  const switchNs = `${prefix}-sw`;
  const hosts: NetnsTopology['hosts'] = [];
  const made: string[] = [];
  const destroy = async () => {
    for (const ns of made.reverse()) await ip('netns', 'del', ns).catch(() => undefined);
    made.length = 0;
  };
  try {
    await ip('netns', 'add', switchNs);
    made.push(switchNs);
    await ip('-n', switchNs, 'link', 'add', 'br0', 'type', 'bridge');
    await ip('-n', switchNs, 'link', 'set', 'br0', 'up');
    for (let i = 0; i < count; i++) {
      const ns = `${prefix}-h${i}`;
      const addr = `${subnet}.${10 + i}`;
      await ip('netns', 'add', ns);
      made.push(ns);
      // Create the pair inside the host namespace, then move the switch end over.
      await ip('-n', ns, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', `p${i}`);
      await ip('-n', ns, 'link', 'set', `p${i}`, 'netns', switchNs);
      await ip('-n', switchNs, 'link', 'set', `p${i}`, 'master', 'br0');
      await ip('-n', switchNs, 'link', 'set', `p${i}`, 'up');
      await ip('-n', ns, 'addr', 'add', `${addr}/24`, 'dev', 'eth0');
      await ip('-n', ns, 'link', 'set', 'eth0', 'up');
      await ip('-n', ns, 'link', 'set', 'lo', 'up');
      hosts.push({ ns, ip: addr, veth: `p${i}` });
    }
  } catch (err) {
    await destroy();
    throw err;
  }
  return {
    prefix,
    switchNs,
    hosts,
    cidr: `${subnet}.0/24`,
    cut: async (index) => {
      await ip('-n', switchNs, 'link', 'set', hosts[index]!.veth, 'down');
    },
    destroy,
  };
}

/** Real ping from inside a namespace: average RTT and loss over `count` probes. */
export async function pingFrom(ns: string, target: string, count = 3): Promise<{ successful: boolean; rttMs: number; lossPercent: number }> {
  try {
    const { stdout } = await run('ip', ['netns', 'exec', ns, 'ping', '-c', String(count), '-i', '0.2', '-W', '1', '-q', target]);
    const loss = Number(/([\d.]+)% packet loss/.exec(stdout)?.[1] ?? 100);
    const rtt = Number(/= [\d.]+\/([\d.]+)\//.exec(stdout)?.[1] ?? 0);
    return { successful: loss < 100, rttMs: rtt, lossPercent: loss };
  } catch (err) {
    const out = String((err as { stdout?: string }).stdout ?? '');
    const loss = Number(/([\d.]+)% packet loss/.exec(out)?.[1] ?? 100);
    return { successful: false, rttMs: 0, lossPercent: loss };
  }
}

/** Real ARP probe (L2) from inside a namespace; absent arping degrades to "unknown" (false). */
export async function arpingFrom(ns: string, target: string): Promise<{ successful: boolean; mac: string }> {
  try {
    const { stdout } = await run('ip', ['netns', 'exec', ns, 'arping', '-c', '1', '-w', '2', '-i', 'eth0', target]);
    const mac = /([0-9a-f]{2}(?::[0-9a-f]{2}){5})/i.exec(stdout)?.[1] ?? '';
    return { successful: Boolean(mac), mac: mac.toLowerCase() };
  } catch {
    return { successful: false, mac: '' };
  }
}
