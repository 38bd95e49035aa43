import { HOST_VALIDATIONS } from '../../src/domain/lifecycle/host-validations';
import { CLUSTER_VALIDATIONS } from '../../src/domain/lifecycle/cluster-validations';
import { DEFAULT_LIFECYCLE_SETTINGS } from '../../src/domain/lifecycle/requirements';
import { deriveMachineNetwork, majorityGroup, networkOf, suggestRoles, vipSuggestions } from '../../src/domain/lifecycle/network';
import { majorityGroupKept } from '../../src/services/connectivity-facts';
import type { ClusterFacts, HostFacts } from '../../src/domain/lifecycle/facts';
import { validationsInfo } from '../../src/domain/lifecycle/validation-types';

const GiB = 1024 ** 3;
function host(id: string, o: Partial<HostFacts> & { cpu?: number; ramGiB?: number; ip?: string; diskGB?: number } = {}): HostFacts {
  const ip = o.ip ?? `10.0.0.${10 + Number(id.replace(/\D/g, '') || 0)}`;
  return {
    id,
    status: 'known',
    day2: false,
    role: 'auto-assign',
    suggestedRole: 'master',
    bootstrap: false,
    hostname: id,
    requestedHostname: undefined,
    inventory: {
      hostname: id,
      cpu: { count: o.cpu ?? 8, architecture: 'x86_64', model_name: 'x' },
      memory: { physical_bytes: (o.ramGiB ?? 32) * GiB, usable_bytes: (o.ramGiB ?? 32) * GiB },
      disks: [{ id: '/dev/sda', name: 'sda', path: '/dev/sda', drive_type: 'SSD', size_bytes: (o.diskGB ?? 200) * 1e9, installation_eligibility: { eligible: (o.diskGB ?? 200) >= 20, not_eligible_reasons: (o.diskGB ?? 200) >= 20 ? [] : ['Disk is too small'] } }],
      interfaces: [{ name: 'eth0', mac_address: '52:54:00:00:00:01', ipv4_addresses: [`${ip}/24`], ipv6_addresses: [], mtu: 1500, has_carrier: true, speed_mbps: 1000, type: 'physical' }],
      routes: [{ interface: 'eth0', destination: '0.0.0.0', gateway: '10.0.0.1', family: 2 }],
      system_vendor: { manufacturer: 'x', product_name: 'y', virtual: true },
      boot: { current_boot_mode: 'uefi' },
    },
    connectivity: undefined,
    ntpSources: [{ source_name: 'a', source_state: 'synced' }],
    imagesStatus: undefined,
    diskSyncMs: undefined,
    installationDiskId: undefined,
    sinceCheckInMs: 1000,
    agentTimestampS: 1000,
    serviceTimestampS: 1000,
    ...o,
  };
}
function cluster(hosts: HostFacts[], o: Partial<ClusterFacts> = {}): ClusterFacts {
  return { id: 'c', name: 'c', status: 'insufficient', baseDnsDomain: 'example.com', pullSecretSet: true, controlPlaneCount: 3, userManagedNetworking: false, machineNetworks: ['10.0.0.0/24'], clusterNetworks: [{ cidr: '10.128.0.0/14', hostPrefix: 23 }], serviceNetworks: ['172.30.0.0/16'], apiVips: ['10.0.0.5'], ingressVips: ['10.0.0.6'], networkType: 'Cilium', day2: false, release: { version: '1.31', cpuArchitectures: ['x86_64', 'arm64'] }, hosts, ...o };
}
const check = (id: string, h: HostFacts, c?: ClusterFacts) => HOST_VALIDATIONS.find((v) => v.id === id)!.check(h, { cluster: c, settings: DEFAULT_LIFECYCLE_SETTINGS });
const ccheck = (id: string, c: ClusterFacts) => CLUSTER_VALIDATIONS.find((v) => v.id === id)!.check(c, { settings: DEFAULT_LIFECYCLE_SETTINGS, hostResults: new Map() });
const fullMesh = (hs: HostFacts[], cut: string[] = []) =>
  hs.forEach((a) => {
    a.connectivity = { remote_hosts: hs.filter((b) => b !== a).map((b) => ({ host_id: b.id, l3_connectivity: [{ remote_ip_address: b.inventory!.interfaces[0]!.ipv4_addresses[0]!.split('/')[0]!, successful: !cut.includes(a.id) && !cut.includes(b.id), average_rtt_ms: 0.5, packet_loss_percentage: 0 }] })) };
  });

describe('host validations', () => {
  it('has-min-cpu-cores fails below 2 cores with a hint naming the host', () => {
    expect(check('has-min-cpu-cores', host('h1', { cpu: 1 }))).toMatchObject({ status: 'failure', cause: 'cpu-below-minimum', hint: expect.stringContaining('h1') });
    expect(check('has-min-cpu-cores', host('h1', { cpu: 2 })).status).toBe('success');
  });
  it('has-memory-for-role allows the meminfo shortfall but not less', () => {
    expect(check('has-memory-for-role', host('h1', { ramGiB: 15.8 })).status).toBe('success');
    expect(check('has-memory-for-role', host('h1', { ramGiB: 12 })).status).toBe('failure');
  });
  it('sufficient-installation-disk-speed warns above the soft threshold and blocks above the hard one', () => {
    expect(check('sufficient-installation-disk-speed', host('h1', { diskSyncMs: 5 })).status).toBe('success');
    expect(check('sufficient-installation-disk-speed', host('h1', { diskSyncMs: 15 }))).toMatchObject({ status: 'failure', cause: 'disk-sync-slow', blocking: false });
    expect(check('sufficient-installation-disk-speed', host('h1', { diskSyncMs: 35 }))).toMatchObject({ status: 'failure', cause: 'disk-sync-too-slow', blocking: true });
  });
  it('belongs-to-machine-cidr says which NIC to connect, or which network to set', () => {
    const h = host('h1', { ip: '192.168.5.7' });
    expect(check('belongs-to-machine-cidr', h, cluster([h]))).toMatchObject({ status: 'failure', hint: 'connect eth0 of h1 to 10.0.0.0/24, or set the machine network to 192.168.5.0/24' });
  });
  it('hostname-unique names the twin', () => {
    const a = host('h1', { hostname: 'same' });
    const b = host('h2', { hostname: 'same' });
    expect(check('hostname-unique', a, cluster([a, b]))).toMatchObject({ status: 'failure', peers: [{ host_id: 'h2', hostname: 'same' }] });
  });
  it('hostname-valid refuses localhost', () => {
    expect(check('hostname-valid', host('h1', { hostname: 'localhost' })).status).toBe('failure');
  });
  it('time-synced-between-host-and-service allows 20 min behind and 1 h ahead', () => {
    expect(check('time-synced-between-host-and-service', host('h1', { agentTimestampS: 1000 + 3500 })).status).toBe('success');
    expect(check('time-synced-between-host-and-service', host('h1', { agentTimestampS: 1000 + 3700 })).hint).toMatch(/62 minutes ahead/);
    expect(check('time-synced-between-host-and-service', host('h1', { agentTimestampS: 1000 - 1300 })).status).toBe('failure');
  });
  it('connected fails after the disconnect timeout', () => {
    expect(check('connected', host('h1', { sinceCheckInMs: 181_000 })).status).toBe('failure');
  });
  it('belongs-to-majority-group names the unreachable peers and addresses', () => {
    const hs = ['h1', 'h2', 'h3', 'h4'].map((id) => host(id));
    fullMesh(hs, ['h4']);
    const c = cluster(hs);
    expect(check('belongs-to-majority-group', hs[0]!, c).status).toBe('success');
    const r = check('belongs-to-majority-group', hs[3]!, c);
    expect(r).toMatchObject({ status: 'failure', cause: 'not-in-majority-group' });
    expect(r.peers!.map((p) => p.address)).toEqual(['10.0.0.11', '10.0.0.12', '10.0.0.13']);
    expect(r.hint).toMatch(/eth0 on h4: it must reach h1 \(10\.0\.0\.11\)/);
  });
  it('ntp-synced never blocks', () => {
    expect(check('ntp-synced', host('h1', { ntpSources: [{ source_name: 'a', source_state: 'unreachable' }] }))).toMatchObject({ status: 'failure', blocking: false });
  });
});

describe('cluster validations', () => {
  it('api-vips-valid refuses a VIP outside the machine network and one a host uses', () => {
    const h = host('h1');
    expect(ccheck('api-vips-valid', cluster([h], { apiVips: ['10.9.0.5'] })).cause).toBe('vip-outside-machine-network');
    expect(ccheck('api-vips-valid', cluster([h], { apiVips: ['10.0.0.11'] }))).toMatchObject({ cause: 'vip-in-use', peers: [{ host_id: 'h1' }] });
  });
  it('sufficient-masters-count counts auto-assign suggestions', () => {
    const hs = ['h1', 'h2', 'h3'].map((id) => host(id));
    expect(ccheck('sufficient-masters-count', cluster(hs)).status).toBe('success');
    expect(ccheck('sufficient-masters-count', cluster(hs.slice(0, 2))).hint).toMatch(/add 1 host/);
  });
  it('machine-cidr-equals-to-calculated-cidr compares with where hosts are', () => {
    expect(ccheck('machine-cidr-equals-to-calculated-cidr', cluster([host('h1')], { machineNetworks: ['10.0.1.0/24'] })).hint).toMatch(/set the machine network to 10\.0\.0\.0\/24/);
  });
  it('ntp-server-configured names the two hosts whose clocks differ most', () => {
    const a = host('h1', { agentTimestampS: 1000 });
    const b = host('h2', { agentTimestampS: 1000 + 600 });
    expect(ccheck('ntp-server-configured', cluster([a, b])).peers!.map((p) => p.host_id)).toEqual(['h2', 'h1']);
  });
});

describe('day-2 host validations', () => {
  const nodes = () => ['n1', 'n2', 'n3'].map((id) => host(id, { status: 'installed' }));
  it('reaches-cluster-nodes names the running nodes a day-2 host cannot reach', () => {
    const ns = nodes();
    const newcomer = host('h9', { day2: true, role: 'worker' });
    const c = cluster([...ns, newcomer], { day2: true });
    expect(check('reaches-cluster-nodes', newcomer, c).status).toBe('pending');
    fullMesh([...ns, newcomer], []);
    expect(check('reaches-cluster-nodes', newcomer, c)).toMatchObject({ status: 'success', message: 'Host reaches all 3 nodes of the cluster' });
    fullMesh([...ns, newcomer], ['n2']);
    expect(check('reaches-cluster-nodes', newcomer, c)).toMatchObject({ status: 'failure', cause: 'cluster-nodes-unreachable', peers: [{ host_id: 'n2', address: '10.0.0.12' }], hint: expect.stringContaining('10.0.0.12') });
    // A node still installing is not part of the running cluster yet; a day-1 host is not checked at all.
    expect(check('reaches-cluster-nodes', newcomer, cluster([...ns.filter((n) => n.id !== 'n2'), newcomer], { day2: true })).status).toBe('success');
    expect(check('reaches-cluster-nodes', host('h1'), c).message).toBe('Not a host joining an installed cluster');
  });
  it('has-cpu-cores-for-role and has-memory-for-role check a host joining a single-node cluster as the worker it becomes, not as the single node', () => {
    const node = host('n1', { status: 'installed', role: 'master' });
    const newcomer = host('h9', { day2: true, role: 'worker', cpu: 4, ramGiB: 8 });
    const sno = cluster([node, newcomer], { day2: true, controlPlaneCount: 1 });
    expect(check('has-cpu-cores-for-role', newcomer, sno).status).toBe('success');
    expect(check('has-memory-for-role', newcomer, sno).status).toBe('success');
    // The single node itself still needs what a single node needs.
    expect(check('has-cpu-cores-for-role', host('s1', { cpu: 4, ramGiB: 8 }), cluster([host('s1', { cpu: 4, ramGiB: 8 })], { controlPlaneCount: 1 })).status).toBe('failure');
  });
  it('compatible-with-cluster-release checks the architecture against the release', () => {
    const arm = host('h9', { day2: true });
    arm.inventory = { ...arm.inventory!, cpu: { ...arm.inventory!.cpu, architecture: 'aarch64' } };
    expect(check('compatible-with-cluster-release', arm, cluster([arm], { day2: true })).status).toBe('success');
    expect(check('compatible-with-cluster-release', arm, cluster([arm], { day2: true, release: { version: '1.31', cpuArchitectures: ['x86_64'] } }))).toMatchObject({ status: 'failure', cause: 'architecture-not-in-release' });
    expect(check('compatible-with-cluster-release', arm, cluster([arm], { day2: true, release: { version: '1.29', cpuArchitectures: undefined } }))).toMatchObject({ status: 'failure', cause: 'release-unknown' });
  });
  it('skips the majority group and latency checks for a day-2 host, and an imported cluster needs no machine network', () => {
    const newcomer = host('h9', { day2: true, role: 'worker' });
    const c = cluster([...nodes(), newcomer], { day2: true });
    expect(check('belongs-to-majority-group', newcomer, c).message).toMatch(/No majority group check/);
    expect(check('sufficient-network-latency-requirement-for-role', newcomer, c).status).toBe('success');
    const imported = cluster([newcomer], { day2: true, machineNetworks: [] });
    expect(check('machine-cidr-defined', newcomer, imported).status).toBe('success');
    expect(check('belongs-to-machine-cidr', newcomer, imported).status).toBe('success');
    // The same host as a day-1 host still needs the machine network.
    expect(check('machine-cidr-defined', host('h1'), cluster([host('h1')], { machineNetworks: [] })).status).toBe('failure');
  });
});

describe('network derivation', () => {
  it('derives the machine network, majority group, VIP suggestions and roles', () => {
    expect(networkOf('192.168.1.77/24')).toBe('192.168.1.0/24');
    const hs = ['h1', 'h2', 'h3', 'h4', 'h5'].map((id, i) => host(id, { cpu: i < 2 ? 4 : 16, ramGiB: i < 2 ? 16 : 64 }));
    expect(deriveMachineNetwork(hs)).toBe('10.0.0.0/24');
    fullMesh(hs, ['h5']);
    expect(majorityGroup(hs, '10.0.0.0/24')).toEqual(['h1', 'h2', 'h3', 'h4']);
    expect(vipSuggestions([[{ network: 'n', free_addresses: ['10.0.0.5', '10.0.0.6', '10.0.0.7'] }], [{ network: 'n', free_addresses: ['10.0.0.6', '10.0.0.7'] }]], 'n')).toEqual(['10.0.0.6', '10.0.0.7']);
    const roles = suggestRoles(cluster(hs));
    // Smallest sufficient hosts become control plane first (reference §8 ordering).
    expect([...roles].filter(([, r]) => r === 'master').map(([id]) => id)).toEqual(['h1', 'h2', 'h3']);
    // The master requirements in force decide (HOST_REQUIREMENTS_FILE): 2-core hosts are masters when 2 cores suffice.
    const small = ['s1', 's2', 's3'].map((id) => host(id, { cpu: 2, ramGiB: 8 }));
    expect([...suggestRoles(cluster(small))].map(([, r]) => r)).toEqual(['worker', 'worker', 'worker']);
    const lowered = { ...DEFAULT_LIFECYCLE_SETTINGS.requirements.master, cpuCores: 2, ramMib: 4096 };
    expect([...suggestRoles(cluster(small), lowered)].map(([, r]) => r)).toEqual(['master', 'master', 'master']);
  });
  it('keeps a suggested master while it qualifies, as assisted-service does, and fills only the places left by weight', () => {
    // Each round stores its suggestions on the hosts, as a refresh does; the next round starts from them.
    const round = (hs: HostFacts[]) => {
      const roles = suggestRoles(cluster(hs));
      for (const h of hs) h.suggestedRole = roles.get(h.id) ?? h.suggestedRole;
      return hs.filter((h) => roles.get(h.id) === 'master').map((h) => h.id);
    };
    // Five equal hosts, h3-h5 already suggested master at an earlier refresh.
    const hs = ['h1', 'h2', 'h3', 'h4', 'h5'].map((id, i) => host(id, { suggestedRole: i < 2 ? 'worker' : 'master' }));
    expect(round(hs)).toEqual(['h3', 'h4', 'h5']);
    // h1 reports less memory (it would rank first on weight): the suggestions stay where they were.
    hs[0] = host('h1', { ramGiB: 24, suggestedRole: hs[0]!.suggestedRole });
    expect(round(hs)).toEqual(['h3', 'h4', 'h5']);
    // A master that no longer qualifies gives its place to the smallest sufficient host.
    hs[3] = host('h4', { cpu: 2, suggestedRole: hs[3]!.suggestedRole });
    expect(round(hs)).toEqual(['h1', 'h3', 'h5']);
    expect(hs[3]!.suggestedRole).toBe('worker');
    // A host the user made master takes a place: the heaviest suggestion gives way, the lighter ones stay.
    hs[1] = host('h2', { role: 'master', suggestedRole: hs[1]!.suggestedRole });
    expect(round(hs)).toEqual(['h1', 'h3']);
    expect(hs[4]!.suggestedRole).toBe('worker');
  });
  it('keeps a majority group across host lists only while who reaches whom is the same', () => {
    // Each round is a new host list with new reports, as each refresh builds: latencies move, reach changes twice.
    const round = (cut: string[], rtt: number, ip5 = '10.0.0.15') => {
      const hs = ['h1', 'h2', 'h3', 'h4', 'h5'].map((id) => host(id, id === 'h5' ? { ip: ip5 } : {}));
      fullMesh(hs, cut);
      for (const h of hs) for (const r of h.connectivity!.remote_hosts) r.l3_connectivity![0]!.average_rtt_ms = rtt;
      return majorityGroupKept(hs, '10.0.0.0/24');
    };
    expect(round([], 0.4)).toEqual(['h1', 'h2', 'h3', 'h4', 'h5']);
    expect(round([], 0.9)).toEqual(['h1', 'h2', 'h3', 'h4', 'h5']);
    expect(round(['h2'], 0.9)).toEqual(['h1', 'h3', 'h4', 'h5']);
    expect(round(['h2'], 0.3)).toEqual(['h1', 'h3', 'h4', 'h5']);
    // Same reports, but h5 moved out of the network: not the group computed for it before.
    expect(round([], 0.4, '10.0.1.15')).toEqual(['h1', 'h2', 'h3', 'h4']);
    expect(round([], 0.4)).toEqual(['h1', 'h2', 'h3', 'h4', 'h5']);
  });
  it('keeps validations_info in the assisted-service shape', () => {
    const info = JSON.parse(validationsInfo([{ id: 'has-inventory', status: 'success', message: 'ok', blocking: false, hint: 'x' }], () => 'hardware'));
    expect(info).toEqual({ hardware: [{ id: 'has-inventory', status: 'success', message: 'ok' }] });
  });
});
