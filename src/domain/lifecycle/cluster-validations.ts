/**
 * Cluster validations as data (reference §5b). `group` says what a failure
 * means for the cluster: `input` (the user must provide something →
 * pending-for-input) or `required` (→ insufficient).
 */
import { cidrsOverlap, ipInCidr } from '../input-rules';
import { effectiveRole, inventoryView, type ClusterFacts } from './facts';
import { deriveMachineNetwork, hostAddressesIn } from './network';
import type { LifecycleSettings } from './requirements';
import { fail, ok, pending, type ValidationSpec, type ValidationResult } from './validation-types';

export interface ClusterCheckContext {
  settings: LifecycleSettings;
  /** Per host: the validations computed in this refresh (to know which hosts are ready). */
  hostResults: Map<string, ValidationResult[]>;
}

type Spec = ValidationSpec<ClusterFacts, ClusterCheckContext> & { group: 'input' | 'required' };

const READY_HOST_STATES = ['known', 'preparing-for-installation', 'preparing-successful'];

function defined(id: string, label: string, present: (c: ClusterFacts) => boolean, hint: string): Spec {
  return {
    id,
    category: id === 'pull-secret-set' || id === 'dns-domain-defined' ? 'configuration' : 'network',
    group: 'input',
    description: `${label} is set.`,
    check: (c) => (present(c) ? ok(`${label} is defined`) : fail(`${label} is undefined`, { cause: `${id.replace(/-defined|-set$/, '')}-missing`, hint })),
  };
}

function vipsValid(id: 'api-vips-valid' | 'ingress-vips-valid', pick: (c: ClusterFacts) => string[], label: string): Spec {
  return {
    id,
    category: 'network',
    group: 'required',
    description: `${label} VIPs are inside the machine network and not used by a host.`,
    check: (c) => {
      const vips = pick(c);
      if (c.userManagedNetworking || c.controlPlaneCount === 1) return ok(`${label} VIPs are not required`);
      if (!vips.length) return pending(`${label} VIPs are undefined`);
      if (!c.machineNetworks.length) return pending('Machine network is not defined yet');
      for (const vip of vips) {
        if (!c.machineNetworks.some((m) => ipInCidr(vip, m))) return fail(`${label} VIP ${vip} does not belong to machine network ${c.machineNetworks.join(', ')}`, { cause: 'vip-outside-machine-network', hint: `choose a free address in ${c.machineNetworks[0]} for the ${label} VIP` });
        const owner = c.hosts.find((h) => (inventoryView(h)?.interfaces ?? []).some((i) => i.ipv4_addresses.some((a) => a.split('/')[0] === vip)));
        if (owner) return fail(`${label} VIP ${vip} is already used by host ${owner.hostname ?? owner.id}`, { cause: 'vip-in-use', peers: [{ host_id: owner.id, hostname: owner.hostname, address: vip }], hint: `choose an address no host uses for the ${label} VIP` });
      }
      return ok(`${label} VIPs ${vips.join(', ')} belong to the machine network`);
    },
  };
}

export const CLUSTER_VALIDATIONS: readonly Spec[] = [
  defined('machine-cidr-defined', 'The Machine Network CIDR', (c) => c.machineNetworks.length > 0 || c.userManagedNetworking, 'set machine_networks on the cluster, or API/Ingress VIPs from which it is derived'),
  defined('cluster-cidr-defined', 'The Cluster Network CIDR', (c) => c.clusterNetworks.length > 0, 'set cluster_networks on the cluster'),
  defined('service-cidr-defined', 'The Service Network CIDR', (c) => c.serviceNetworks.length > 0, 'set service_networks on the cluster'),
  defined('dns-domain-defined', 'The base domain', (c) => Boolean(c.baseDnsDomain), 'set base_dns_domain on the cluster, for example example.com'),
  defined('pull-secret-set', 'The pull secret', (c) => c.pullSecretSet, 'set pull_secret on the cluster'),
  defined('api-vips-defined', 'API VIPs', (c) => c.apiVips.length > 0 || c.userManagedNetworking || c.controlPlaneCount === 1, 'set api_vips on the cluster (GET the cluster for free-address suggestions)'),
  defined('ingress-vips-defined', 'Ingress VIPs', (c) => c.ingressVips.length > 0 || c.userManagedNetworking || c.controlPlaneCount === 1, 'set ingress_vips on the cluster'),
  vipsValid('api-vips-valid', (c) => c.apiVips, 'API'),
  vipsValid('ingress-vips-valid', (c) => c.ingressVips, 'Ingress'),
  {
    id: 'machine-cidr-equals-to-calculated-cidr',
    category: 'network',
    group: 'required',
    description: "The machine network is the one the hosts' addresses point to.",
    check: (c) => {
      if (c.userManagedNetworking || !c.machineNetworks.length) return ok('No calculated machine network to compare');
      const derived = deriveMachineNetwork(c.hosts);
      if (!derived) return pending('Hosts have not reported their networks yet');
      return c.machineNetworks.includes(derived)
        ? ok('The Cluster Machine CIDR is equivalent to the calculated CIDR')
        : fail(`The machine network ${c.machineNetworks.join(', ')} differs from ${derived}, where the hosts have their addresses`, { cause: 'machine-network-mismatch', hint: `set the machine network to ${derived}, or move the hosts' NICs into ${c.machineNetworks[0]}` });
    },
  },
  {
    id: 'no-cidrs-overlapping',
    category: 'network',
    group: 'required',
    description: 'Machine, cluster and service networks do not overlap.',
    check: (c) => {
      const all = [...c.machineNetworks.map((n) => ['machine', n]), ...c.clusterNetworks.map((n) => ['cluster', n.cidr]), ...c.serviceNetworks.map((n) => ['service', n])];
      for (let i = 0; i < all.length; i++)
        for (let j = i + 1; j < all.length; j++)
          if (all[i]![0] !== all[j]![0] && cidrsOverlap(all[i]![1]!, all[j]![1]!))
            return fail(`The ${all[i]![0]} network ${all[i]![1]} overlaps the ${all[j]![0]} network ${all[j]![1]}`, { cause: 'networks-overlap', hint: `choose a ${all[j]![0]} network that does not overlap ${all[i]![1]}` });
      return ok('No CIDRS are overlapping');
    },
  },
  {
    id: 'network-prefix-valid',
    category: 'network',
    group: 'required',
    description: 'The cluster network has room for every host at the host prefix.',
    check: (c) => {
      for (const n of c.clusterNetworks) {
        const prefix = Number(n.cidr.split('/')[1]);
        const room = 2 ** (n.hostPrefix - prefix);
        if (n.hostPrefix <= prefix || room < c.hosts.length) return fail(`Cluster network ${n.cidr} with host prefix /${n.hostPrefix} has room for ${n.hostPrefix <= prefix ? 0 : room} hosts; the cluster has ${c.hosts.length}`, { cause: 'host-prefix-too-small', hint: `use a larger cluster network or a longer host prefix than /${n.hostPrefix}` });
      }
      return ok('Cluster Network prefix is valid');
    },
  },
  {
    id: 'networks-same-address-families',
    category: 'network',
    group: 'required',
    description: 'All networks use the same IP families.',
    check: (c) => {
      const fam = (cidrs: string[]) => [...new Set(cidrs.map((x) => (x.includes(':') ? 6 : 4)))].sort().join();
      const m = fam(c.machineNetworks);
      const cl = fam(c.clusterNetworks.map((n) => n.cidr));
      const s = fam(c.serviceNetworks);
      return [m, cl, s].filter(Boolean).every((x) => x === cl) ? ok('Same address families for all networks') : fail('The networks use different IP families', { cause: 'mixed-families', hint: 'use IPv4 (or IPv6) for machine, cluster and service networks alike' });
    },
  },
  {
    id: 'all-hosts-are-ready-to-install',
    category: 'hosts-data',
    group: 'required',
    description: 'Every host of the cluster is known (or preparing).',
    check: (c) => {
      const notReady = c.hosts.filter((h) => !READY_HOST_STATES.includes(h.status));
      if (!c.hosts.length) return fail('The cluster has no hosts', { cause: 'no-hosts', hint: 'boot hosts from the discovery image of the cluster infra-env' });
      return notReady.length
        ? fail(`Hosts not ready: ${notReady.map((h) => `${h.hostname ?? h.id} (${h.status})`).join(', ')}`, { cause: 'hosts-not-ready', peers: notReady.map((h) => ({ host_id: h.id, hostname: h.hostname })), hint: 'fix the failing validations of these hosts, or remove them from the cluster' })
        : ok('All hosts in the cluster are ready to install');
    },
  },
  {
    id: 'sufficient-masters-count',
    category: 'hosts-data',
    group: 'required',
    description: 'The cluster has exactly control_plane_count control-plane hosts (auto-assign candidates count).',
    check: (c) => {
      const masters = c.hosts.filter((h) => effectiveRole(h, c) === 'master' || effectiveRole(h, c) === 'sno').length;
      const workers = c.hosts.filter((h) => effectiveRole(h, c) === 'worker').length;
      if (c.controlPlaneCount === 1) {
        return masters === 1 && workers === 0 ? ok('The cluster has exactly one host') : fail(`A single-node cluster needs exactly 1 host; it has ${c.hosts.length}`, { cause: 'sno-host-count', hint: 'remove hosts until one is left, or raise control_plane_count' });
      }
      return masters === c.controlPlaneCount
        ? ok(`The cluster has the exact amount of dedicated control plane nodes (${masters})`)
        : fail(`The cluster must have exactly ${c.controlPlaneCount} dedicated control plane nodes; it has ${masters}`, { cause: 'control-plane-count', hint: masters < c.controlPlaneCount ? `add ${c.controlPlaneCount - masters} host(s) that meet the control-plane requirements, or set roles` : 'set the role of the extra hosts to worker' });
    },
  },
  {
    id: 'ntp-server-configured',
    category: 'network',
    group: 'required',
    description: "The hosts' clocks agree with each other.",
    check: (c, ctx) => {
      const stamps = c.hosts.filter((h) => h.agentTimestampS !== undefined && h.serviceTimestampS !== undefined && !['disconnected', 'discovering'].includes(h.status));
      if (stamps.length < 2) return ok('Not enough hosts to compare clocks');
      const offsets = stamps.map((h) => ({ h, off: h.agentTimestampS! - h.serviceTimestampS! }));
      const min = offsets.reduce((a, b) => (b.off < a.off ? b : a));
      const max = offsets.reduce((a, b) => (b.off > a.off ? b : a));
      if (max.off - min.off <= ctx.settings.clusterClockSpreadMaxS) return ok("Hosts' clocks are synchronized with each other");
      return fail(`Host clocks differ by ${Math.round((max.off - min.off) / 60)} minutes (${max.h.hostname ?? max.h.id} and ${min.h.hostname ?? min.h.id})`, { cause: 'host-clocks-differ', peers: [max.h, min.h].map((h) => ({ host_id: h.id, hostname: h.hostname })), hint: 'configure the same NTP sources on every host (additional_ntp_source)' });
    },
  },
];

export const CLUSTER_VALIDATION_CATEGORY: Record<string, string> = Object.fromEntries(CLUSTER_VALIDATIONS.map((v) => [v.id, v.category]));
export const CLUSTER_INPUT_VALIDATIONS = CLUSTER_VALIDATIONS.filter((v) => v.group === 'input').map((v) => v.id);

export function hostsInMachineNetwork(c: ClusterFacts): number {
  return c.hosts.filter((h) => c.machineNetworks.some((m) => hostAddressesIn(h, m).length > 0)).length;
}
