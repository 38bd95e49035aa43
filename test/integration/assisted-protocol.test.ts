/**
 * The agent and controller sides of the assisted-service protocol as peers
 * other than Landfall's own agent speak it: the upstream Go agent leaves out
 * zero values and sends empty lists as null, reports loopback, and validates
 * what it is handed (bare IPs in connectivity checks, InstallCmdRequest).
 */
import { randomUUID } from 'node:crypto';
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(async () => {
  await h?.stop();
});

/** An inventory as the Go agent marshals it: no eligibility, null lists, loopback, no zero values. */
const goInventory = (hostname: string, ip: string, mac: string, diskBytes = 128849018880) => ({
  hostname,
  cpu: { count: 8, architecture: 'x86_64', model_name: 'QEMU Virtual CPU' },
  memory: { physical_bytes: 34359738368, usable_bytes: 33000000000 },
  disks: [
    { id: `/dev/disk/by-id/virtio-${hostname}`, by_id: `/dev/disk/by-id/virtio-${hostname}`, name: 'vda', path: '/dev/vda', drive_type: 'HDD', size_bytes: diskBytes, serial: hostname },
    { name: 'sr0', path: '/dev/sr0', drive_type: 'ODD', size_bytes: 1031798784, removable: true, is_installation_media: true, installation_eligibility: { not_eligible_reasons: ['Disk is removable'] } },
  ],
  interfaces: [
    { name: 'lo', ipv4_addresses: ['127.0.0.1/8'], ipv6_addresses: ['::1/128'], flags: ['up', 'loopback'], mtu: 65536 },
    { name: 'eth0', mac_address: mac, ipv4_addresses: [`${ip}/24`], ipv6_addresses: null, flags: ['up', 'broadcast'], has_carrier: true, mtu: 1500, type: 'physical' },
  ],
  routes: null,
  system_vendor: { manufacturer: 'QEMU', product_name: 'Standard PC', virtual: true },
});

async function newCluster(body: Record<string, unknown> = {}) {
  const c = await call('POST', `${h.base}/clusters`, { body: { name: `p${Math.random().toString(36).slice(2, 8)}`, openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com', ...body } });
  expect(c.status).toBe(201);
  const ie = await call('POST', `${h.base}/infra-envs`, { body: { name: `${c.body.name}-ie`, pull_secret: PULL_SECRET, cluster_id: c.body.id } });
  expect(ie.status).toBe(201);
  return { clusterId: c.body.id as string, infraEnvId: ie.body.id as string };
}

async function register(infraEnvId: string, version = 'registry.example.com/assisted-installer-agent:v2.44') {
  const hostId = randomUUID();
  const r = await call('POST', `${h.base}/infra-envs/${infraEnvId}/hosts`, { body: { host_id: hostId, discovery_agent_version: version } });
  expect(r.status).toBe(201);
  return hostId;
}

const reply = (infraEnvId: string, hostId: string, body: Record<string, unknown>) => call('POST', `${h.base}/infra-envs/${infraEnvId}/hosts/${hostId}/instructions`, { body });
const host = async (infraEnvId: string, hostId: string) => (await call('GET', `${h.base}/infra-envs/${infraEnvId}/hosts/${hostId}`)).body;
const events = async (clusterId: string) => (await call('GET', `${h.base}/events?cluster_id=${clusterId}`)).body as Array<{ name: string; message: string }>;

describe('step replies as the upstream agent sends them', () => {
  let ids: { clusterId: string; infraEnvId: string };
  let hostId: string;
  beforeAll(async () => {
    ids = await newCluster();
    hostId = await register(ids.infraEnvId);
  });

  it('takes a success without exit_code as exit code 0, with no step-failed event', async () => {
    const r = await reply(ids.infraEnvId, hostId, { step_type: 'inventory', step_id: 'inventory-0a1b2c3d', output: JSON.stringify(goInventory('master-0', '10.77.13.12', '52:54:00:00:00:01')) });
    expect(r.status).toBe(204);
    expect((await events(ids.clusterId)).filter((e) => e.name === 'host_step_failed')).toEqual([]);
    expect((await host(ids.infraEnvId, hostId)).requested_hostname).toBe('master-0');
  });

  it('stores the inventory with the service-decided eligibility and install disk, and without loopback', async () => {
    const hst = await host(ids.infraEnvId, hostId);
    const inv = JSON.parse(hst.inventory);
    expect(inv.routes).toEqual([]);
    expect(inv.interfaces.map((i: { name: string }) => i.name)).toEqual(['eth0']);
    expect(inv.disks[0].installation_eligibility).toEqual({ eligible: true, not_eligible_reasons: [] });
    expect(inv.disks[1].installation_eligibility.eligible).toBe(false);
    expect(inv.disks[1].installation_eligibility.not_eligible_reasons).toEqual(expect.arrayContaining(['Disk is removable', expect.stringMatching(/^Disk is too small \(disk only has 1\.0 GB, but 100 GB are required\)$/)]));
    expect(hst.installation_disk_id).toBe('/dev/disk/by-id/virtio-master-0');
    expect(hst.installation_disk_path).toBe('/dev/disk/by-id/virtio-master-0');
    expect(JSON.stringify(hst)).not.toContain('127.0.0.1');
    expect(hst).not.toHaveProperty('inventory_digest');
  });

  it('makes a disk below the role minimum ineligible with the reason, and the host insufficient', async () => {
    const small = await register(ids.infraEnvId);
    expect((await reply(ids.infraEnvId, small, { step_type: 'inventory', step_id: 'inventory-11111111', output: JSON.stringify(goInventory('small-0', '10.77.13.13', '52:54:00:00:00:02', 16e9)) })).status).toBe(204);
    const hst = await host(ids.infraEnvId, small);
    expect(JSON.parse(hst.inventory).disks[0].installation_eligibility).toEqual({ eligible: false, not_eligible_reasons: ['Disk is too small (disk only has 16 GB, but 100 GB are required)'] });
    expect(hst.installation_disk_id).toBeUndefined();
    expect(hst.status).toBe('insufficient');
    const v = JSON.parse(hst.validations_info).hardware.find((x: { id: string }) => x.id === 'has-min-valid-disks');
    expect(v).toMatchObject({ status: 'failure', message: expect.stringContaining('Disk is too small (disk only has 16 GB, but 100 GB are required)') });
  });

  it.each([
    ['an empty object', {}],
    ['null lists everywhere', { hostname: 'n', cpu: { count: 4, flags: null }, disks: null, interfaces: null, routes: null, system_vendor: null, memory: null, boot: null }],
    ['a NIC with ipv4_addresses null', { interfaces: [{ name: 'eth0', mac_address: '52:54:00:00:00:09', ipv4_addresses: null, ipv6_addresses: null }] }],
    ['a disk without installation_eligibility', { disks: [{ name: 'sda', path: '/dev/sda', drive_type: 'SSD', size_bytes: 500e9 }] }],
  ])('answers 204 to an inventory with %s', async (_what, inventory) => {
    const id = await register(ids.infraEnvId);
    const r = await reply(ids.infraEnvId, id, { step_type: 'inventory', step_id: 'inventory-22222222', output: JSON.stringify(inventory) });
    expect(r.status).toBe(204);
    expect((await host(ids.infraEnvId, id)).inventory).toBeDefined();
  });

  it('refuses an inventory field of the wrong type with a 400 naming it, keeping what was stored', async () => {
    const before = (await host(ids.infraEnvId, hostId)).inventory;
    const r = await reply(ids.infraEnvId, hostId, { step_type: 'inventory', step_id: 'inventory-33333333', output: JSON.stringify({ disks: [{ size_bytes: 'big' }] }) });
    expect(r.status).toBe(400);
    expect(r.body.reason).toContain('disks[0].size_bytes must be a number');
    expect((await host(ids.infraEnvId, hostId)).inventory).toBe(before);
  });

  it('refuses an exit code that does not fit 32 bits with a 400, not a 500', async () => {
    const r = await reply(ids.infraEnvId, hostId, { step_type: 'ntp-synchronizer', step_id: 'ntp-synchronizer-44444444', exit_code: 2 ** 31, output: '' });
    expect(r.status).toBe(400);
  });

  it('still records a real failure (non-zero exit code) as a step-failed event', async () => {
    const r = await reply(ids.infraEnvId, hostId, { step_type: 'ntp-synchronizer', step_id: 'ntp-synchronizer-55555555', exit_code: 255, error: 'chronyc: not found' });
    expect(r.status).toBe(204);
    expect((await events(ids.clusterId)).some((e) => e.name === 'host_step_failed' && e.message.includes('chronyc: not found'))).toBe(true);
  });
});

describe('steps handed out as the upstream agent validates them', () => {
  it('gives connectivity-check peers as bare IP addresses, never CIDRs or loopback', async () => {
    const ids = await newCluster();
    const a = await register(ids.infraEnvId);
    const b = await register(ids.infraEnvId);
    await reply(ids.infraEnvId, a, { step_type: 'inventory', step_id: 'inventory-a', output: JSON.stringify(goInventory('a', '10.77.13.21', '52:54:00:00:01:01')) });
    await reply(ids.infraEnvId, b, { step_type: 'inventory', step_id: 'inventory-b', output: JSON.stringify(goInventory('b', '10.77.13.22', '52:54:00:00:01:02')) });
    // Out of discovering (and the peer list built) with the refresh that follows; a person's read settles it.
    expect((await call('GET', `${h.base}/clusters/${ids.clusterId}`)).status).toBe(200);
    const steps = (await call('GET', `${h.base}/infra-envs/${ids.infraEnvId}/hosts/${a}/instructions`)).body;
    const cc = steps.instructions.find((s: { step_type: string }) => s.step_type === 'connectivity-check');
    expect(cc).toBeDefined();
    const peers = JSON.parse(cc.args[0]);
    expect(peers).toEqual([{ host_id: b, nics: [{ name: 'eth0', mac: '52:54:00:00:01:02', ip_addresses: ['10.77.13.22'] }] }]);
    // Both report reaching the other: the cluster lists them as the network's majority group, as AS does.
    const report = (to: string, ip: string) => JSON.stringify({ remote_hosts: [{ host_id: to, l3_connectivity: [{ remote_ip_address: ip, successful: true, average_rtt_ms: 0.5 }] }] });
    expect((await reply(ids.infraEnvId, a, { step_type: 'connectivity-check', step_id: 'connectivity-check-a', output: report(b, '10.77.13.22') })).status).toBe(204);
    expect((await reply(ids.infraEnvId, b, { step_type: 'connectivity-check', step_id: 'connectivity-check-b', output: report(a, '10.77.13.21') })).status).toBe(204);
    const groups = JSON.parse((await call('GET', `${h.base}/clusters/${ids.clusterId}`)).body.connectivity_majority_groups);
    expect(groups).toEqual({ '10.77.13.0/24': [a, b].sort() });
  });

  it('asks agents that run the installer images to pull them, and not Landfall\'s own agent', async () => {
    const ids = await newCluster();
    const upstream = await register(ids.infraEnvId);
    const own = await register(ids.infraEnvId, 'landfall-agent/0.1.0');
    for (const [id, n] of [[upstream, 1], [own, 2]] as const) await reply(ids.infraEnvId, id, { step_type: 'inventory', step_id: `inventory-${n}`, output: JSON.stringify(goInventory(`h${n}`, `10.77.13.3${n}`, `52:54:00:00:02:0${n}`)) });
    // The hosts leave discovering (whose plan is the inventory alone) with the refresh that follows; a person's read settles it.
    expect((await call('GET', `${h.base}/clusters/${ids.clusterId}`)).status).toBe(200);
    const types = async (id: string) => ((await call('GET', `${h.base}/infra-envs/${ids.infraEnvId}/hosts/${id}/instructions`)).body.instructions as Array<{ step_type: string; args: string[] }>);
    const up = (await types(upstream)).find((s) => s.step_type === 'container-image-availability');
    expect(up).toBeDefined();
    expect(JSON.parse(up!.args[0]!)).toEqual({ images: ['quay.io/edge-infrastructure/assisted-installer:latest', 'quay.io/edge-infrastructure/assisted-installer-controller:latest'], timeout: 960 });
    expect((await types(own)).map((s) => s.step_type)).not.toContain('container-image-availability');
    // A failed pull fails the host's container-images-available validation, naming the image.
    await reply(ids.infraEnvId, upstream, { step_type: 'container-image-availability', step_id: 'container-image-availability-1', output: JSON.stringify({ images: [{ name: 'quay.io/edge-infrastructure/assisted-installer:latest', result: 'failure' }, { name: 'quay.io/edge-infrastructure/assisted-installer-controller:latest', result: 'success', size_bytes: 1e8, time: 3, download_rate: 30 }] }) });
    const v = JSON.parse((await host(ids.infraEnvId, upstream)).validations_info).network.find((x: { id: string }) => x.id === 'container-images-available');
    expect(v).toMatchObject({ status: 'failure', message: expect.stringContaining('quay.io/edge-infrastructure/assisted-installer:latest') });
  });
});

describe('cluster defaults a controller and clients rely on', () => {
  it('lists the required components as built-in monitored operators from creation, status empty', async () => {
    const { clusterId } = await newCluster();
    const ops = (await call('GET', `${h.base}/clusters/${clusterId}/monitored-operators`)).body;
    expect(ops.map((o: { name: string }) => o.name)).toEqual(['kube-apiserver', 'etcd', 'cni']);
    for (const o of ops) {
      expect(o).toMatchObject({ cluster_id: clusterId, operator_type: 'builtin' });
      expect(o.status).toBeUndefined();
    }
    // A report keeps the entry in its place with what the service set.
    expect((await call('PUT', `${h.base}/clusters/${clusterId}/monitored-operators`, { body: { name: 'etcd', status: 'progressing', status_info: 'waiting', version: '3.6' } })).status).toBe(200);
    const after = (await call('GET', `${h.base}/clusters/${clusterId}/monitored-operators`)).body;
    expect(after[1]).toMatchObject({ name: 'etcd', status: 'progressing', operator_type: 'builtin', timeout_seconds: 3600 });
    expect((await call('GET', `${h.base}/clusters/${clusterId}`)).body.monitored_operators.map((o: { name: string }) => o.name)).toEqual(['kube-apiserver', 'etcd', 'cni']);
  });

  it('makes a single-node cluster user-managed networking and its host master at registration', async () => {
    const { clusterId, infraEnvId } = await newCluster({ high_availability_mode: 'None' });
    expect((await call('GET', `${h.base}/clusters/${clusterId}`)).body.user_managed_networking).toBe(true);
    const id = await register(infraEnvId);
    expect((await host(infraEnvId, id)).role).toBe('master');
    const multi = await newCluster();
    expect((await call('GET', `${h.base}/clusters/${multi.clusterId}`)).body.user_managed_networking).toBe(false);
  });

  it('treats null in a cluster update as not given, so later reads still match the schema', async () => {
    const { clusterId } = await newCluster({ http_proxy: 'http://proxy.example.com:3128' });
    const r = await call('PATCH', `${h.base}/clusters/${clusterId}`, { body: { http_proxy: null, vip_dhcp_allocation: null } });
    expect(r.status).toBe(201);
    expect(r.body.http_proxy).toBe('http://proxy.example.com:3128');
    expect((await call('GET', `${h.base}/clusters`)).status).toBe(200);
  });
});
