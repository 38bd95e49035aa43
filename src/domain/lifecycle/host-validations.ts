/**
 * Host validations as data (reference §5a): id (the API's string), category,
 * and a pure check that returns status, message and — on failure — a cause,
 * the peers involved and a hint that says what to do.
 */
import { cidrsOverlap, hostnameProblem, ipInCidr } from '../input-rules';
import { CLUSTER_NODE_STATUSES, effectiveRole, inventoryView, type ClusterFacts, type HostFacts, type L3Result } from './facts';
import { hostAddressesIn, hostNetworks, majorityGroupCached, reaches } from './network';
import { isConnected } from './silence';
import { RAM_TOLERANCE_FRACTION, RAM_TOLERANCE_MIB, type LifecycleSettings } from './requirements';
import { fail, ok, pending, type ValidationSpec } from './validation-types';

/**
 * All the time-synced check makes of a host's clock: null before its first
 * timed poll, 'ok' within the tolerance, else the whole minutes its message
 * names, signed ('+' ahead, '-' behind). Two clocks with one verdict give
 * one result, so the refresh keys a host's validations on this, not on the
 * difference in seconds: that moves by a second whenever a poll and the
 * service's stamp of it fall either side of a second's boundary, and each
 * such move validated the host again, its whole inventory parsed, to the
 * same answer (3,441 of the 11,016 hosts whose checks ran in an overloaded
 * agent-api mix: bench/README.md, twenty-first session).
 */
export function clockVerdict(h: Pick<HostFacts, 'agentTimestampS' | 'serviceTimestampS'>, settings: Pick<LifecycleSettings, 'clockBehindMaxS' | 'clockAheadMaxS'>): string | null {
  if (h.agentTimestampS === undefined || h.serviceTimestampS === undefined) return null;
  const diff = h.agentTimestampS - h.serviceTimestampS;
  if (diff >= -settings.clockBehindMaxS && diff <= settings.clockAheadMaxS) return 'ok';
  return `${diff > 0 ? '+' : '-'}${Math.round(Math.abs(diff) / 60)}`;
}

export interface HostCheckContext {
  cluster: ClusterFacts | undefined;
  settings: LifecycleSettings;
}

type Spec = ValidationSpec<HostFacts, HostCheckContext>;

const name = (h: HostFacts) => h.hostname ?? h.id;
const gib = (bytes: number) => Math.round((bytes / 1024 ** 3) * 10) / 10;
const ramMib = (h: HostFacts) => (h.inventory ? h.inventory.memory.physical_bytes / 1024 ** 2 : 0);
const ramOk = (have: number, need: number) => have >= need * (1 - RAM_TOLERANCE_FRACTION) - RAM_TOLERANCE_MIB;
const hwMin = (ctx: HostCheckContext) => {
  const r = ctx.settings.requirements;
  return { cpu: Math.min(r.master.cpuCores, r.worker.cpuCores), ram: Math.min(r.master.ramMib, r.worker.ramMib) };
};
const roleReq = (h: HostFacts, ctx: HostCheckContext) => ctx.settings.requirements[effectiveRole(h, ctx.cluster)];
const installDisk = (h: HostFacts) => h.inventory?.disks.find((d) => d.id === h.installationDiskId) ?? h.inventory?.disks.find((d) => d.installation_eligibility.eligible);

type Probe = { peer: HostFacts; l: L3Result };
/** Per facts object (one refresh), the host's same-role probes: the latency and packet-loss checks both use them. */
const probesMemo = new WeakMap<HostFacts, { cluster: object; role: string; probes: Probe[] }>();
/** Per connectivity report (parsed once, kept while its text is), its remote hosts by id: n lookups, not n² scans. */
const remoteIndex = new WeakMap<object, Map<string, NonNullable<HostFacts['connectivity']>['remote_hosts'][number]>>();

/** Same-role peers in the machine network with their probe results from this host. */
function roleProbes(h: HostFacts, ctx: HostCheckContext): Probe[] {
  const cluster = ctx.cluster;
  if (!cluster || !h.connectivity) return [];
  const role = effectiveRole(h, cluster);
  const memo = probesMemo.get(h);
  if (memo && memo.cluster === cluster && memo.role === role) return memo.probes;
  let byId = remoteIndex.get(h.connectivity);
  if (!byId) remoteIndex.set(h.connectivity, (byId = new Map(h.connectivity.remote_hosts.map((r) => [r.host_id, r]))));
  const probes = cluster.hosts
    .filter((p) => p.id !== h.id && inventoryView(p) && effectiveRole(p, cluster) === role)
    .flatMap((p) => {
      const remote = byId.get(p.id);
      if (!remote?.l3_connectivity?.length) return [];
      const addrs = new Set(cluster.machineNetworks.flatMap((c) => hostAddressesIn(p, c)));
      return remote.l3_connectivity.filter((l) => addrs.size === 0 || addrs.has(l.remote_ip_address)).map((l) => ({ peer: p, l }));
    });
  probesMemo.set(h, { cluster, role, probes });
  return probes;
}

export const HOST_VALIDATIONS: readonly Spec[] = [
  {
    id: 'connected',
    category: 'network',
    description: 'The agent polled within the disconnect timeout.',
    check: (h, ctx) =>
      isConnected(h, ctx.settings.disconnectTimeoutMs)
        ? ok('Host is connected')
        : fail(`Host is disconnected: no poll for ${h.sinceCheckInMs === undefined ? 'ever' : `${Math.round(h.sinceCheckInMs / 1000)} s${h.excusedSilenceMs ? ` (${Math.round(h.excusedSilenceMs / 1000)} s of it while the service was overloaded, not counted)` : ''}`}`, {
            cause: 'agent-not-polling',
            hint: `check that ${name(h)} is powered on, still booted from the discovery image, and can reach the service (its agent writes a diagnosis to the console)`,
          }),
  },
  {
    id: 'has-inventory',
    category: 'hardware',
    description: 'The agent sent its hardware inventory.',
    check: (h) => (h.inventory ? ok('Valid inventory exists for the host') : pending('Waiting for the host to send its inventory')),
  },
  {
    id: 'has-min-cpu-cores',
    category: 'hardware',
    description: 'Enough CPU cores for any role.',
    check: (h, ctx) => {
      if (!h.inventory) return pending('Missing inventory');
      const need = hwMin(ctx).cpu;
      return h.inventory.cpu.count >= need
        ? ok(`Sufficient CPU cores (${h.inventory.cpu.count})`)
        : fail(`The host has ${h.inventory.cpu.count} CPU cores; at least ${need} are required`, { cause: 'cpu-below-minimum', hint: `give ${name(h)} at least ${need} CPU cores, or remove it from the cluster` });
    },
  },
  {
    id: 'has-min-memory',
    category: 'hardware',
    description: 'Enough memory for any role.',
    check: (h, ctx) => {
      if (!h.inventory) return pending('Missing inventory');
      const need = hwMin(ctx).ram;
      return ramOk(ramMib(h), need)
        ? ok(`Sufficient memory (${gib(h.inventory.memory.physical_bytes)} GiB)`)
        : fail(`The host has ${gib(h.inventory.memory.physical_bytes)} GiB of memory; at least ${need / 1024} GiB are required`, { cause: 'memory-below-minimum', hint: `give ${name(h)} at least ${need / 1024} GiB of RAM, or remove it from the cluster` });
    },
  },
  {
    id: 'has-min-valid-disks',
    category: 'hardware',
    description: 'At least one disk is eligible for installation.',
    check: (h) => {
      if (!h.inventory) return pending('Missing inventory');
      const eligible = h.inventory.disks.filter((d) => d.installation_eligibility.eligible);
      if (eligible.length) return ok(`Sufficient disk capacity (${eligible.length} eligible disk${eligible.length > 1 ? 's' : ''})`);
      const reasons = h.inventory.disks.map((d) => `${d.name}: ${d.installation_eligibility.not_eligible_reasons.join(', ') || 'not eligible'}`).join('; ');
      return fail(`No eligible disk for installation (${reasons || 'no disks found'})`, { cause: 'no-eligible-disk', hint: `attach a non-removable disk of at least 20 GB to ${name(h)}` });
    },
  },
  {
    id: 'has-cpu-cores-for-role',
    category: 'hardware',
    description: 'Enough CPU cores for the role the host has or is suggested.',
    check: (h, ctx) => {
      if (!h.inventory) return pending('Missing inventory');
      const role = effectiveRole(h, ctx.cluster);
      const need = roleReq(h, ctx).cpuCores;
      return h.inventory.cpu.count >= need
        ? ok(`Sufficient CPU cores for role ${role}`)
        : fail(`Require at least ${need} CPU cores for ${role} role, found only ${h.inventory.cpu.count}`, { cause: 'cpu-below-role', hint: `give ${name(h)} ${need} CPU cores, or make it a ${role === 'worker' ? 'smaller role' : 'worker'}` });
    },
  },
  {
    id: 'has-memory-for-role',
    category: 'hardware',
    description: 'Enough memory for the role the host has or is suggested.',
    check: (h, ctx) => {
      if (!h.inventory) return pending('Missing inventory');
      const role = effectiveRole(h, ctx.cluster);
      const need = roleReq(h, ctx).ramMib;
      return ramOk(ramMib(h), need)
        ? ok(`Sufficient RAM for role ${role}`)
        : fail(`Require at least ${need / 1024} GiB RAM for role ${role}, found only ${gib(h.inventory.memory.physical_bytes)} GiB`, { cause: 'memory-below-role', hint: `give ${name(h)} ${need / 1024} GiB of RAM, or make it a worker` });
    },
  },
  {
    id: 'sufficient-installation-disk-speed',
    category: 'hardware',
    description: 'The install disk syncs fast enough for etcd (soft threshold warns, hard blocks).',
    check: (h, ctx) => {
      if (h.diskSyncMs === undefined) return ok('Speed of installation disk has not yet been measured');
      const req = roleReq(h, ctx);
      const disk = installDisk(h)?.name ?? 'the install disk';
      if (h.diskSyncMs > req.diskSyncHardMs)
        return fail(`The installation disk ${disk} is too slow: fdatasync p99 ${h.diskSyncMs} ms, the limit is ${req.diskSyncHardMs} ms`, { cause: 'disk-sync-too-slow', hint: `use an SSD or NVMe disk as the install disk of ${name(h)}; etcd needs fdatasync under ${req.diskSyncSoftMs} ms` });
      if (h.diskSyncMs > req.diskSyncSoftMs)
        return fail(`The installation disk ${disk} is slower than recommended: fdatasync p99 ${h.diskSyncMs} ms (recommended under ${req.diskSyncSoftMs} ms); install is allowed`, { cause: 'disk-sync-slow', hint: `consider a faster install disk for ${name(h)}`, blocking: false });
      return ok(`Speed of installation disk is sufficient (${h.diskSyncMs} ms)`);
    },
  },
  {
    id: 'machine-cidr-defined',
    category: 'network',
    description: 'The cluster has a machine network.',
    check: (h, ctx) => {
      if (!ctx.cluster) return pending('Host is not bound to a cluster');
      if (ctx.cluster.userManagedNetworking || ctx.cluster.machineNetworks.length) return ok('Machine Network CIDR is defined');
      if (h.day2) return ok('No machine network is known for this imported cluster: set machine_networks on it to check new hosts against it');
      return fail('Machine Network CIDR is undefined', { cause: 'machine-network-missing', hint: 'set the machine network of the cluster, or set API and Ingress VIPs so it can be derived' });
    },
  },
  {
    id: 'belongs-to-machine-cidr',
    category: 'network',
    description: 'The host has an address in every machine network.',
    check: (h, ctx) => {
      const c = ctx.cluster;
      if (h.day2 && c && !c.machineNetworks.length && !c.userManagedNetworking) return ok('No machine network is known for this imported cluster');
      if (!c || !h.inventory || (!c.machineNetworks.length && !c.userManagedNetworking)) return pending('Missing inventory or machine network CIDR');
      if (c.userManagedNetworking) return ok('No machine network CIDR validation needed: user-managed networking');
      const missing = c.machineNetworks.filter((cidr) => hostAddressesIn(h, cidr).length === 0);
      if (!missing.length) return ok('Host belongs to all machine network CIDRs');
      const nics = (h.inventory.interfaces ?? []).filter((i) => i.has_carrier);
      const nic = nics[0]?.name ?? 'a NIC';
      const own = hostNetworks(h);
      return fail(`Host does not have an address in machine network ${missing.join(', ')}`, {
        cause: 'not-in-machine-network',
        hint: `connect ${nic} of ${name(h)} to ${missing[0]}${own.length ? `, or set the machine network to ${own[0]}` : ''}`,
      });
    },
  },
  {
    id: 'belongs-to-majority-group',
    category: 'network',
    description: 'The host reaches, and is reached by, the largest group of connected hosts.',
    check: (h, ctx) => {
      const c = ctx.cluster;
      if (!c || !h.inventory) return pending('Missing inventory');
      if (c.controlPlaneCount === 1 || c.hosts.length === 1) return ok('No connectivity check needed for a single host');
      // As assisted-service: a day-2 host is checked against the running nodes instead (reaches-cluster-nodes).
      if (h.day2) return ok('No majority group check for a host joining an installed cluster (see reaches-cluster-nodes)');
      const cidr = c.machineNetworks[0];
      if (!cidr) return pending('Machine network CIDR is not defined yet');
      const reporting = c.hosts.filter((x) => inventoryView(x) && hostAddressesIn(x, cidr).length > 0);
      if (reporting.length < 3) return pending('Waiting for at least three hosts in the machine network');
      if (!h.connectivity) return pending('Waiting for the connectivity report');
      const group = majorityGroupCached(c.hosts, cidr);
      if (group.includes(h.id)) return ok('Host has connectivity to the majority of hosts in the cluster');
      const unreachable = reporting.filter((p) => p.id !== h.id && group.includes(p.id) && !(reaches(h, p, cidr) && reaches(p, h, cidr)));
      // The NIC that should carry the machine network: the one with an address in it, else the first with a carrier.
      const myNic = (h.inventory.interfaces.find((i) => i.ipv4_addresses.some((a) => ipInCidr(a.split('/')[0]!, cidr))) ?? h.inventory.interfaces.find((i) => i.has_carrier))?.name ?? 'its NIC';
      return fail(`No connectivity to the majority of hosts in the cluster: cannot reach ${unreachable.map(name).join(', ') || 'its peers'} in ${cidr}`, {
        cause: 'not-in-majority-group',
        peers: unreachable.map((p) => ({ host_id: p.id, hostname: p.hostname, address: hostAddressesIn(p, cidr)[0] })),
        hint: `check the cable, switch port and VLAN of ${myNic} on ${name(h)}: it must reach ${unreachable.map((p) => `${name(p)} (${hostAddressesIn(p, cidr)[0]})`).slice(0, 3).join(', ')} in ${cidr}`,
      });
    },
  },
  {
    id: 'sufficient-network-latency-requirement-for-role',
    category: 'network',
    description: 'Average RTT to same-role peers is within the role threshold (soft warns, hard blocks).',
    check: (h, ctx) => {
      if (h.day2) return ok('Network latency requirement is not checked for a host joining an installed cluster');
      const probes = roleProbes(h, ctx).filter((p) => p.l.successful);
      if (!probes.length) return ok('Network latency requirement has been satisfied (no same-role peers measured yet)');
      const req = roleReq(h, ctx);
      const worst = probes.reduce((a, b) => ((b.l.average_rtt_ms ?? 0) > (a.l.average_rtt_ms ?? 0) ? b : a));
      const rtt = worst.l.average_rtt_ms ?? 0;
      if (rtt <= req.rttSoftMs) return ok('Network latency requirement has been satisfied');
      const peers = [{ host_id: worst.peer.id, hostname: worst.peer.hostname, address: worst.l.remote_ip_address, nic: worst.l.outgoing_nic }];
      return fail(`Network latency to ${name(worst.peer)} is ${rtt} ms, above the ${req.rttSoftMs} ms required for role ${effectiveRole(h, ctx.cluster)}`, {
        cause: 'latency-too-high',
        peers,
        hint: `put ${name(h)} and ${name(worst.peer)} on the same low-latency network segment`,
        blocking: rtt > req.rttHardMs,
      });
    },
  },
  {
    id: 'sufficient-packet-loss-requirement-for-role',
    category: 'network',
    description: 'Packet loss to same-role peers is within the role threshold (soft warns, hard blocks).',
    check: (h, ctx) => {
      if (h.day2) return ok('Packet loss requirement is not checked for a host joining an installed cluster');
      const probes = roleProbes(h, ctx).filter((p) => p.l.successful);
      if (!probes.length) return ok('Packet loss requirement has been satisfied (no same-role peers measured yet)');
      const req = roleReq(h, ctx);
      const worst = probes.reduce((a, b) => ((b.l.packet_loss_percentage ?? 0) > (a.l.packet_loss_percentage ?? 0) ? b : a));
      const loss = worst.l.packet_loss_percentage ?? 0;
      if (loss <= req.lossSoftPercent) return ok('Packet loss requirement has been satisfied');
      return fail(`Packet loss to ${name(worst.peer)} is ${loss}%, above the ${req.lossSoftPercent}% allowed for role ${effectiveRole(h, ctx.cluster)}`, {
        cause: 'packet-loss-too-high',
        peers: [{ host_id: worst.peer.id, hostname: worst.peer.hostname, address: worst.l.remote_ip_address }],
        hint: `check cabling and NIC errors between ${name(h)} and ${name(worst.peer)} (ip -s link)`,
        blocking: loss > req.lossHardPercent,
      });
    },
  },
  {
    id: 'container-images-available',
    category: 'network',
    description: 'The host could pull the images its install runs (asked of agents whose install runs them).',
    check: (h) => {
      // As in assisted-service, no attempt yet is no failure: Landfall's own agent is never asked (host-steps.ts).
      const failed = (h.imagesStatus ?? []).filter((i) => i.result === 'failure');
      if (!failed.length) return ok('All required container images were either pulled successfully or no attempt was made to pull them');
      const names = failed.map((i) => i.name).join(', ');
      return fail(`Failed to fetch container images needed for installation from ${names}`, { cause: 'container-image-pull-failed', hint: `let ${name(h)} reach the registry of ${names} (proxy, DNS, firewall or pull secret), or set INSTALLER_IMAGE/CONTROLLER_IMAGE to a mirror it can reach` });
    },
  },
  {
    id: 'has-default-route',
    category: 'network',
    description: 'The host has a default route with a gateway.',
    check: (h) => {
      if (!h.inventory) return pending('Missing inventory');
      return h.inventory.routes.some((r) => (r.destination === '0.0.0.0' || r.destination === '::') && r.gateway)
        ? ok('Host has been configured with at least one default route')
        : fail('Host has no default route', { cause: 'no-default-route', hint: `give ${name(h)} a default gateway (DHCP or static network configuration of the infra-env)` });
    },
  },
  {
    id: 'hostname-unique',
    category: 'network',
    description: 'No other host of the cluster has the same hostname.',
    check: (h, ctx) => {
      if (!h.hostname) return pending('Missing inventory');
      const twins = (ctx.cluster?.hosts ?? []).filter((o) => o.id !== h.id && o.hostname === h.hostname);
      if (!twins.length) return ok(`Hostname ${h.hostname} is unique in cluster`);
      return fail(`Hostname ${h.hostname} is not unique in cluster`, {
        cause: 'hostname-duplicate',
        peers: twins.map((t) => ({ host_id: t.id, hostname: t.hostname })),
        hint: `set a different hostname on one of the hosts named ${h.hostname} (PATCH host_name)`,
      });
    },
  },
  {
    id: 'hostname-valid',
    category: 'network',
    description: 'The hostname is a valid, non-localhost DNS name.',
    check: (h) => {
      if (!h.hostname) return pending('Missing inventory');
      const problem = hostnameProblem(h.hostname);
      return problem ? fail(`Hostname ${h.hostname} is invalid: ${problem}`, { cause: 'hostname-invalid', hint: `set a valid hostname on host ${h.id} (PATCH host_name), for example worker-1` }) : ok(`Hostname ${h.hostname} is allowed`);
    },
  },
  {
    id: 'non-overlapping-subnets',
    category: 'network',
    description: 'No two NICs are in the same or overlapping subnets.',
    check: (h) => {
      if (!h.inventory) return pending('Missing inventory');
      const nets = h.inventory.interfaces.flatMap((i) => i.ipv4_addresses.map((a) => ({ nic: i.name, cidr: a })));
      for (let i = 0; i < nets.length; i++)
        for (let j = i + 1; j < nets.length; j++)
          if (nets[i]!.nic !== nets[j]!.nic && cidrsOverlap(nets[i]!.cidr, nets[j]!.cidr))
            return fail(`Address networks overlap: ${nets[i]!.nic} (${nets[i]!.cidr}) and ${nets[j]!.nic} (${nets[j]!.cidr})`, { cause: 'overlapping-subnets', hint: `remove the address from one of ${nets[i]!.nic} and ${nets[j]!.nic}, or bond them` });
      return ok('Host subnets are not overlapping');
    },
  },
  {
    id: 'ntp-synced',
    category: 'network',
    description: 'Some NTP source is synchronised (warning only).',
    check: (h) => {
      if (!h.ntpSources) return ok('NTP synchronisation has not been reported yet');
      if (h.ntpSources.some((s) => s.source_state === 'synced')) return ok('Host NTP is synced');
      return fail('Host could not synchronize with any NTP server', { cause: 'ntp-not-synced', hint: 'add reachable NTP servers to the cluster (additional_ntp_source) or open UDP 123 to the listed sources', blocking: false });
    },
  },
  {
    id: 'time-synced-between-host-and-service',
    category: 'network',
    description: "The host's clock is close enough to the service's.",
    check: (h, ctx) => {
      const verdict = clockVerdict(h, ctx.settings);
      if (verdict === null) return pending('Waiting for the host to poll');
      if (verdict === 'ok') return ok('Host clock is synchronized with service');
      const ahead = verdict.startsWith('+');
      const mins = verdict.slice(1);
      return fail(`Host clock is ${mins} minutes ${ahead ? 'ahead of' : 'behind'} the service`, { cause: 'clock-skew', hint: `set the clock of ${name(h)} (BIOS or NTP): it is ${mins} minutes ${ahead ? 'ahead' : 'behind'}` });
    },
  },
  {
    id: 'reaches-cluster-nodes',
    category: 'network',
    description: 'Day 2: the host reaches every node of the running cluster at its machine-network address (Landfall).',
    check: (h, ctx) => {
      const c = ctx.cluster;
      if (!h.day2 || !c) return ok('Not a host joining an installed cluster');
      if (!h.inventory) return pending('Missing inventory');
      const nodes = c.hosts.filter((n) => n.id !== h.id && CLUSTER_NODE_STATUSES.includes(n.status) && inventoryView(n));
      if (!nodes.length) return ok('No node addresses are known for this cluster (imported): nothing to probe');
      if (!h.connectivity) return pending('Waiting for the connectivity report');
      // The address each node is reached at: its machine-network address, else any it reported.
      const addressOf = (n: HostFacts) => c.machineNetworks.flatMap((cidr) => hostAddressesIn(n, cidr))[0] ?? inventoryView(n)!.interfaces.flatMap((i) => i.ipv4_addresses.map((a) => a.split('/')[0]!))[0];
      const unreachable = nodes.filter((n) => {
        const probes = h.connectivity!.remote_hosts.find((r) => r.host_id === n.id)?.l3_connectivity ?? [];
        return !probes.some((l) => l.successful && l.remote_ip_address === addressOf(n));
      });
      if (!unreachable.length) return ok(`Host reaches all ${nodes.length} nodes of the cluster`);
      const probed = unreachable.filter((n) => h.connectivity!.remote_hosts.some((r) => r.host_id === n.id));
      if (!probed.length) return pending(`Waiting for the host to probe the cluster's nodes (${unreachable.length} not probed yet)`);
      return fail(`Host cannot reach ${unreachable.length} of the cluster's ${nodes.length} nodes: ${unreachable.map((n) => `${name(n)} (${addressOf(n)})`).slice(0, 5).join(', ')}`, {
        cause: 'cluster-nodes-unreachable',
        peers: unreachable.map((n) => ({ host_id: n.id, hostname: n.hostname, address: addressOf(n) })),
        hint: `connect ${name(h)} to the cluster's network${c.machineNetworks[0] ? ` ${c.machineNetworks[0]}` : ''} so it reaches ${unreachable.slice(0, 3).map((n) => addressOf(n)).join(', ')} (check cable, switch port, VLAN and firewall)`,
      });
    },
  },
  {
    id: 'compatible-with-cluster-release',
    category: 'hardware',
    description: "Day 2: the host's CPU architecture is one the running cluster's release is shipped for (Landfall).",
    check: (h, ctx) => {
      const c = ctx.cluster;
      if (!h.day2 || !c) return ok('Not a host joining an installed cluster');
      if (!h.inventory) return pending('Missing inventory');
      const arch = h.inventory.cpu.architecture === 'aarch64' ? 'arm64' : h.inventory.cpu.architecture;
      const archs = c.release.cpuArchitectures;
      if (!archs) return fail(`The cluster's release ${c.release.version} is not in this service's release catalogue`, { cause: 'release-unknown', hint: `add release ${c.release.version} to RELEASES_FILE, or set the cluster's openshift_version to a release the service has` });
      if (archs.includes(arch)) return ok(`Host CPU architecture ${arch} is supported by the cluster's release ${c.release.version}`);
      return fail(`Host CPU architecture ${arch} is not one the cluster's release ${c.release.version} is shipped for (${archs.join(', ')})`, { cause: 'architecture-not-in-release', hint: `add a host of architecture ${archs.join(' or ')} instead of ${name(h)}` });
    },
  },
];

export const HOST_VALIDATION_CATEGORY: Record<string, string> = Object.fromEntries(HOST_VALIDATIONS.map((v) => [v.id, v.category]));

/** Validations whose failure means the hardware itself is short: the host is insufficient whatever the network. */
export const HARDWARE_MINIMUM = ['has-min-cpu-cores', 'has-min-memory', 'has-min-valid-disks'];
