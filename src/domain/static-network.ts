/**
 * Static network configuration of an infra-env (assisted-service shape: per
 * host an nmstate YAML and a MAC → logical NIC map) turned into
 * NetworkManager keyfiles for the discovery image. Each profile matches its
 * NIC by MAC address, so every host of the infra-env gets all profiles and
 * NetworkManager activates only the ones for its own NICs: no boot-time script.
 * Covers what discovery needs: ethernet NICs, static or DHCP IPv4/IPv6, MTU,
 * routes with a next hop, DNS servers.
 */
import { parse as parseYaml } from 'yaml';
import { ipVersion } from './ip-address';

export interface HostStaticNetwork {
  network_yaml: string;
  mac_interface_map: Array<{ mac_address: string; logical_nic_name: string }>;
}

export class StaticNetworkError extends Error {}

interface NmAddress {
  ip: string;
  'prefix-length': number;
}
interface NmInterface {
  name: string;
  type?: string;
  state?: string;
  mtu?: number;
  ipv4?: { enabled?: boolean; dhcp?: boolean; address?: NmAddress[] };
  ipv6?: { enabled?: boolean; dhcp?: boolean; autoconf?: boolean; address?: NmAddress[] };
}
interface NmState {
  interfaces?: NmInterface[];
  routes?: { config?: Array<{ destination: string; 'next-hop-address': string; 'next-hop-interface'?: string; metric?: number }> };
  'dns-resolver'?: { config?: { server?: string[] } };
}

const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i;

function family(ip: string): 4 | 6 {
  const f = ipVersion(ip);
  if (!f) throw new StaticNetworkError(`"${ip}" is not an IP address`);
  return f as 4 | 6;
}

function ipSection(version: 4 | 6, cfg: NmInterface['ipv4'], routes: NonNullable<NmState['routes']>['config'], nic: string, dns: string[]): string[] {
  const key = version === 4 ? 'ipv4' : 'ipv6';
  if (!cfg || cfg.enabled === false) return [`[${key}]`, `method=${version === 4 ? 'disabled' : 'disabled'}`];
  const lines = [`[${key}]`];
  const addresses = cfg.address ?? [];
  if (cfg.dhcp || (version === 6 && (cfg as { autoconf?: boolean }).autoconf)) lines.push('method=auto');
  else if (addresses.length) lines.push('method=manual');
  else lines.push(`method=${version === 4 ? 'disabled' : 'ignore'}`);
  addresses.forEach((a, i) => {
    if (family(a.ip) !== version) throw new StaticNetworkError(`${nic}: ${a.ip} is not an IPv${version} address`);
    const p = Number(a['prefix-length']);
    if (!(p >= 0 && p <= (version === 4 ? 32 : 128))) throw new StaticNetworkError(`${nic}: prefix-length ${a['prefix-length']} is invalid`);
    lines.push(`address${i + 1}=${a.ip}/${p}`);
  });
  const own = (routes ?? []).filter((r) => (!r['next-hop-interface'] || r['next-hop-interface'] === nic) && family(r['next-hop-address']) === version);
  own.forEach((r, i) => {
    const isDefault = r.destination === '0.0.0.0/0' || r.destination === '::/0';
    if (isDefault && addresses.length) lines.push(`gateway=${r['next-hop-address']}`);
    else lines.push(`route${i + 1}=${r.destination},${r['next-hop-address']}${r.metric !== undefined ? `,${r.metric}` : ''}`);
  });
  const servers = dns.filter((s) => family(s) === version);
  if (servers.length) lines.push(`dns=${servers.join(';')};`);
  return lines;
}

/** Keyfiles (file name → contents) for every host of an infra-env's static network configuration. */
export function staticNetworkKeyfiles(hosts: HostStaticNetwork[]): Array<{ name: string; contents: string }> {
  const out: Array<{ name: string; contents: string }> = [];
  hosts.forEach((host, hi) => {
    let state: NmState;
    if (typeof host.network_yaml !== 'string' || host.network_yaml.trim() === '') throw new StaticNetworkError(`host ${hi}: network_yaml is empty; it must describe the host's interfaces (nmstate YAML)`);
    try {
      state = parseYaml(host.network_yaml) as NmState;
    } catch (err) {
      throw new StaticNetworkError(`host ${hi}: network_yaml is not YAML (${(err as Error).message.split('\n')[0]})`);
    }
    if (state === null || typeof state !== 'object' || Array.isArray(state)) throw new StaticNetworkError(`host ${hi}: network_yaml must be an nmstate document (a YAML mapping with interfaces)`);
    // Absent means no entries (assisted-service requires none); every interface then lacks its MAC, which is said below.
    const map = host.mac_interface_map ?? [];
    for (const [mi, m] of map.entries()) if (typeof m?.logical_nic_name !== 'string' || typeof m?.mac_address !== 'string') throw new StaticNetworkError(`host ${hi}: mac_interface_map[${mi}] needs logical_nic_name and mac_address`);
    const macs = new Map(map.map((m) => [m.logical_nic_name, m.mac_address.toLowerCase()]));
    for (const [nic, mac] of macs) if (!MAC.test(mac)) throw new StaticNetworkError(`host ${hi}: "${mac}" for ${nic} is not a MAC address`);
    const dns = state['dns-resolver']?.config?.server ?? [];
    for (const iface of state.interfaces ?? []) {
      if (iface.type && iface.type !== 'ethernet') throw new StaticNetworkError(`host ${hi}: interface ${iface.name} has type ${iface.type}; only ethernet is supported in the discovery image`);
      const mac = macs.get(iface.name);
      if (!mac) throw new StaticNetworkError(`host ${hi}: interface ${iface.name} has no entry in mac_interface_map`);
      const id = `landfall-${mac.replace(/:/g, '')}`;
      const contents = [
        '[connection]',
        `id=${id}`,
        'type=ethernet',
        `autoconnect=${iface.state === 'down' ? 'false' : 'true'}`,
        '',
        '[ethernet]',
        `mac-address=${mac}`,
        ...(iface.mtu ? [`mtu=${iface.mtu}`] : []),
        '',
        ...ipSection(4, iface.ipv4, state.routes?.config, iface.name, dns),
        '',
        ...ipSection(6, iface.ipv6, state.routes?.config, iface.name, dns),
        '',
      ].join('\n');
      out.push({ name: `${id}.nmconnection`, contents });
    }
  });
  return out;
}
