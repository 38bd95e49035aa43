import { randomUUID } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import { call, PULL_SECRET, SSH_KEY, startApiHarness, type ApiHarness } from '../support/api-harness';

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(async () => {
  await h?.stop();
});

const inventory = (hostname: string, ip: string) =>
  JSON.stringify({
    hostname,
    cpu: { count: 8, architecture: 'x86_64', model_name: 'Xeon' },
    memory: { physical_bytes: 32 * 1024 ** 3, usable_bytes: 31 * 1024 ** 3 },
    disks: [{ id: '/dev/disk/by-id/wwn-0x1', by_id: '/dev/disk/by-id/wwn-0x1', path: '/dev/sda', name: 'sda', drive_type: 'SSD', size_bytes: 200e9, installation_eligibility: { eligible: true, not_eligible_reasons: [] } }],
    interfaces: [{ name: 'eth0', mac_address: '52:54:00:00:00:01', ipv4_addresses: [`${ip}/24`], ipv6_addresses: [], mtu: 1500, has_carrier: true, speed_mbps: 1000, type: 'physical' }],
    routes: [{ interface: 'eth0', destination: '0.0.0.0', gateway: '192.168.10.1', family: 2 }],
    system_vendor: { manufacturer: 'QEMU', product_name: 'Standard PC', virtual: true },
  });

describe('the core assisted-service flow', () => {
  let clusterId: string;
  let infraEnvId: string;
  const hostIds = [randomUUID(), randomUUID()];

  it('lists the release catalogue', async () => {
    const r = await call('GET', `${h.base}/openshift-versions`);
    expect(r.status).toBe(200);
    expect(r.body['1.31']).toMatchObject({ display_name: expect.stringContaining('1.31'), support_level: 'production' });
  });

  it('names its components and the optional operators it installs (none)', async () => {
    const v = await call('GET', `${h.base}/component-versions`);
    expect(v.status).toBe(200);
    expect(v.body).toEqual({ versions: { 'landfall-service': expect.stringMatching(/^\d+\.\d+\.\d+/), 'discovery-agent': expect.stringMatching(/^landfall-agent\//) }, release_tag: `v${v.body.versions['landfall-service']}` });
    const ops = await call('GET', `${h.base}/supported-operators`);
    expect([ops.status, ops.body]).toEqual([200, []]);
  });

  it('serves its OpenAPI document', async () => {
    const r = await call('GET', `${h.base}/openapi.json`);
    expect(r.status).toBe(200);
    expect(r.body.openapi).toMatch(/^3\./);
  });

  it('creates a cluster (201) without ever returning the pull secret', async () => {
    const r = await call('POST', `${h.base}/clusters`, {
      body: { name: 'edge-1', openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com', ssh_public_key: SSH_KEY },
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ kind: 'Cluster', name: 'edge-1', status: 'pending-for-input', pull_secret_set: true, openshift_version: '1.31', image_info: {} });
    expect(r.body.href).toBe(`/api/assisted-install/v2/clusters/${r.body.id}`);
    expect(r.text).not.toContain('c2VjcmV0LXB1bGwtc2VjcmV0LXZhbHVl');
    expect(r.body.cluster_networks[0]).toMatchObject({ cidr: '10.128.0.0/14', host_prefix: 23 });
    // What AS always sends: its zero time for what has not happened, and its disk-encryption defaults.
    for (const f of ['install_started_at', 'install_completed_at', 'controller_logs_started_at', 'controller_logs_collected_at']) expect([f, r.body[f]]).toEqual([f, '0001-01-01T00:00:00.000Z']);
    expect(r.body.disk_encryption).toEqual({ enable_on: 'none', mode: 'tpmv2' });
    clusterId = r.body.id;
  });

  it('patches the cluster (201) and lists it', async () => {
    const r = await call('PATCH', `${h.base}/clusters/${clusterId}`, { body: { machine_networks: [{ cidr: '192.168.10.0/24' }], api_vips: [{ ip: '192.168.10.5' }], ingress_vips: [{ ip: '192.168.10.6' }] } });
    expect(r.status).toBe(201);
    expect(r.body.api_vips).toEqual([{ cluster_id: clusterId, ip: '192.168.10.5' }]);
    const list = await call('GET', `${h.base}/clusters`);
    expect(list.status).toBe(200);
    expect(list.body.map((c: { id: string }) => c.id)).toContain(clusterId);
  });

  it('creates an infra-env bound to the cluster and gives a presigned image URL', async () => {
    const r = await call('POST', `${h.base}/infra-envs`, { body: { name: 'edge-1-ie', pull_secret: PULL_SECRET, cluster_id: clusterId, ssh_authorized_key: SSH_KEY, image_type: 'minimal-iso' } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ kind: 'InfraEnv', cluster_id: clusterId, type: 'minimal-iso', pull_secret_set: true });
    // No base image is configured here, so there is no image to download yet.
    expect([r.body.download_url, r.body.expires_at]).toEqual([undefined, '0001-01-01T00:00:00.000Z']);
    infraEnvId = r.body.id;
    const u = await call('GET', `${h.base}/infra-envs/${infraEnvId}/downloads/image-url`);
    expect(u.status).toBe(200);
    expect(u.body.url).toContain(`/images/${infraEnvId}/minimal.iso`);
    expect(new Date(u.body.expires_at).getTime()).toBeGreaterThan(Date.now());
  });

  it('puts the static network configuration into discovery.ign as MAC-matched NetworkManager profiles', async () => {
    const network_yaml = 'interfaces:\n  - name: eth0\n    type: ethernet\n    ipv4:\n      enabled: true\n      address:\n        - ip: 192.168.10.21\n          prefix-length: 24\n';
    const r = await call('PATCH', `${h.base}/infra-envs/${infraEnvId}`, { body: { static_network_config: [{ network_yaml, mac_interface_map: [{ mac_address: '52:54:00:12:34:56', logical_nic_name: 'eth0' }] }] } });
    expect(r.status).toBe(201);
    const ign = await call('GET', `${h.base}/infra-envs/${infraEnvId}/downloads/files?file_name=discovery.ign`);
    const f = ign.body.storage.files.find((x: { path: string }) => x.path === '/etc/NetworkManager/system-connections/landfall-525400123456.nmconnection');
    expect(f.mode).toBe(0o600);
    expect(decodeURIComponent(f.contents.source.slice('data:,'.length))).toContain('address1=192.168.10.21/24');
  });

  it('registers hosts through the agent endpoints and hands out the inventory step', async () => {
    for (const id of hostIds) {
      const r = await call('POST', `${h.base}/infra-envs/${infraEnvId}/hosts`, { body: { host_id: id, discovery_agent_version: 'landfall-agent:0.1' } });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({ kind: 'Host', id, status: 'discovering', cluster_id: clusterId, infra_env_id: infraEnvId });
      expect(JSON.parse(r.body.next_step_runner_command.args[0])).toEqual({ infra_env_id: infraEnvId, host_id: id, agent_version: 'landfall-agent:0.1' });
    }
    const steps = await call('GET', `${h.base}/infra-envs/${infraEnvId}/hosts/${hostIds[0]}/instructions?timestamp=${Math.floor(Date.now() / 1000)}`);
    expect(steps.status).toBe(200);
    expect(steps.body).toMatchObject({ next_instruction_seconds: 60, post_step_action: 'continue' });
    expect(steps.body.instructions[0]).toMatchObject({ step_type: 'inventory', args: [hostIds[0]] });
    expect(steps.body.instructions[0].step_id).toMatch(/^inventory-[0-9a-f]{8}$/);
    const host = await call('GET', `${h.base}/infra-envs/${infraEnvId}/hosts/${hostIds[0]}`);
    expect(new Date(host.body.checked_in_at).getTime()).toBeGreaterThan(Date.now() - 60000);
    // Before any inventory, AS names a host by its id; times that have not happened are its zero time.
    expect(host.body).toMatchObject({ requested_hostname: hostIds[0], registered_at: host.body.created_at, logs_started_at: '0001-01-01T00:00:00.000Z', logs_collected_at: '0001-01-01T00:00:00.000Z' });
  });

  it('stores inventory replies as a JSON string, and 400s undecodable output', async () => {
    const ok = await call('POST', `${h.base}/infra-envs/${infraEnvId}/hosts/${hostIds[0]}/instructions`, {
      body: { step_type: 'inventory', step_id: 'inventory-00000001', exit_code: 0, output: inventory('master-0', '192.168.10.20') },
    });
    expect(ok.status).toBe(204);
    const host = await call('GET', `${h.base}/infra-envs/${infraEnvId}/hosts/${hostIds[0]}`);
    expect(typeof host.body.inventory).toBe('string');
    expect(JSON.parse(host.body.inventory).hostname).toBe('master-0');
    expect(host.body.requested_hostname).toBe('master-0');
    const bad = await call('POST', `${h.base}/infra-envs/${infraEnvId}/hosts/${hostIds[1]}/instructions`, { body: { step_type: 'inventory', step_id: 'inventory-00000002', exit_code: 0, output: '{not json' } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ kind: 'Error', id: 400, code: '400' });
  });

  it('patches a host role, hostname and installation disk (201)', async () => {
    const r = await call('PATCH', `${h.base}/infra-envs/${infraEnvId}/hosts/${hostIds[0]}`, {
      body: { host_role: 'master', host_name: 'cp-0', disks_selected_config: [{ id: '/dev/disk/by-id/wwn-0x1', role: 'install' }] },
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ role: 'master', requested_hostname: 'cp-0', installation_disk_id: '/dev/disk/by-id/wwn-0x1' });
    const byCluster = await call('GET', `${h.base}/clusters/${clusterId}/hosts?role=master`);
    expect(byCluster.body.map((x: { id: string }) => x.id)).toEqual([hostIds[0]]);
  });

  it('refuses install on a cluster that is not ready (409 naming the status)', async () => {
    const r = await call('POST', `${h.base}/clusters/${clusterId}/actions/install`);
    expect(r.status).toBe(409);
    expect(r.body.reason).toMatch(/not ready.*(insufficient|pending-for-input)/);
    const cancel = await call('POST', `${h.base}/clusters/${clusterId}/actions/cancel`);
    expect(cancel.status).toBe(409);
  });

  it('lists events with count headers, filters and paging', async () => {
    const all = await call('GET', `${h.base}/events?cluster_id=${clusterId}`);
    expect(all.status).toBe(200);
    const total = Number(all.headers.get('event-count'));
    expect(total).toBe(all.body.length);
    expect(total).toBeGreaterThanOrEqual(5);
    expect(Number(all.headers.get('severity-count-info'))).toBe(total);
    expect(all.body[0].name).toBe('cluster_registration_succeeded');
    const page = await call('GET', `${h.base}/events?cluster_id=${clusterId}&limit=2&offset=1&order=descending`);
    expect(page.body).toHaveLength(2);
    expect(page.body[0].event_time >= page.body[1].event_time).toBe(true);
    expect(Number(page.headers.get('event-count'))).toBe(total);
    const hostOnly = await call('GET', `${h.base}/events?cluster_id=${clusterId}&host_ids=${hostIds[1]}`);
    expect(hostOnly.body.every((e: { host_id?: string }) => e.host_id === hostIds[1])).toBe(true);
    const byText = await call('GET', `${h.base}/events?cluster_id=${clusterId}&message=SUCCESSFULLY%20REGISTERED%20CLUSTER`);
    expect(byText.body).toHaveLength(1);
    const none = await call('GET', `${h.base}/events?cluster_id=${clusterId}&severities=critical`);
    expect(none.body).toEqual([]);
    expect(Number(none.headers.get('event-count'))).toBe(0);
    expect(Number(none.headers.get('severity-count-info'))).toBe(total);
  });

  it('keeps manifests and install-config overrides', async () => {
    const content = Buffer.from('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n').toString('base64');
    const m = await call('POST', `${h.base}/clusters/${clusterId}/manifests`, { body: { folder: 'manifests', file_name: 'cm.yaml', content } });
    expect(m.status).toBe(201);
    expect((await call('GET', `${h.base}/clusters/${clusterId}/manifests`)).body).toEqual([{ folder: 'manifests', file_name: 'cm.yaml', manifest_source: 'user' }]);
    const ic = await call('PATCH', `${h.base}/clusters/${clusterId}/install-config`, { body: JSON.stringify({ controlPlane: { hyperthreading: 'Disabled' } }) });
    expect(ic.status).toBe(201);
    const got = await call('GET', `${h.base}/clusters/${clusterId}/install-config`);
    expect(got.status).toBe(200);
    expect(got.body).toContain('hyperthreading: Disabled');
    expect(got.body).not.toContain('c2VjcmV0');
    // Replicas count the hosts by role: one master (set above); the other host is auto-assign with no suggestion yet.
    const cfg = parseYaml(got.body as string) as { controlPlane: { replicas: number }; compute: Array<{ name: string; replicas: number }> };
    expect([cfg.controlPlane.replicas, cfg.compute]).toEqual([1, [{ name: 'worker', replicas: 0 }]]);
    const file = await fetch(`${h.base}/clusters/${clusterId}/manifests/files?folder=manifests&file_name=cm.yaml`);
    expect([file.status, file.headers.get('content-disposition'), await file.text()]).toEqual([200, 'attachment; filename="cm.yaml"', Buffer.from(content, 'base64').toString()]);
    const del = await call('DELETE', `${h.base}/clusters/${clusterId}/manifests?folder=manifests&file_name=cm.yaml`);
    expect(del.status).toBe(200);
  });

  it('answers 409 for files and credentials that do not exist yet', async () => {
    expect((await call('GET', `${h.base}/clusters/${clusterId}/downloads/credentials?file_name=kubeconfig`)).status).toBe(409);
    expect((await call('GET', `${h.base}/clusters/${clusterId}/credentials`)).status).toBe(409);
    expect((await call('GET', `${h.base}/clusters/${clusterId}/downloads/files?file_name=master.ign`)).status).toBe(409);
    const ic = await call('GET', `${h.base}/clusters/${clusterId}/downloads/files?file_name=install-config.yaml`);
    expect(ic.status).toBe(200);
    expect(ic.text).toContain('baseDomain: example.com');
  });

  it('deletes hosts (204), then the cluster (204)', async () => {
    expect((await call('DELETE', `${h.base}/infra-envs/${infraEnvId}/hosts/${hostIds[1]}`)).status).toBe(204);
    expect((await call('GET', `${h.base}/infra-envs/${infraEnvId}/hosts/${hostIds[1]}`)).status).toBe(404);
    expect((await call('DELETE', `${h.base}/clusters/${clusterId}`)).status).toBe(204);
    expect((await call('GET', `${h.base}/clusters/${clusterId}`)).status).toBe(404);
  });
});
