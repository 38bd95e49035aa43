import { randomUUID } from 'node:crypto';
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';

/**
 * Bad input gets a 4xx in the API's error shape naming the field and rule,
 * never a 500, and stored data is left exactly as it was.
 */
let h: ApiHarness;
let clusterId: string;
let infraEnvId: string;
const hostId = randomUUID();

const snapshot = async () => ({
  clusters: await h.db('clusters').orderBy('id').select('id', 'name', 'status', 'doc', 'pull_secret', 'updated_at'),
  infraEnvs: await h.db('infra_envs').orderBy('id').select('id', 'name', 'doc', 'updated_at'),
  hosts: await h.db('hosts').orderBy('id').select('id', 'role', 'requested_hostname', 'doc', 'inventory', 'updated_at'),
  events: Number((await h.db('events').count('* as n'))[0]!.n),
});

beforeAll(async () => {
  h = await startApiHarness({ env: { API_BODY_LIMIT_BYTES: '65536' } });
  clusterId = (await call('POST', `${h.base}/clusters`, { body: { name: 'c1', openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com', machine_networks: [{ cidr: '10.0.0.0/24' }] } })).body.id;
  infraEnvId = (await call('POST', `${h.base}/infra-envs`, { body: { name: 'ie1', pull_secret: PULL_SECRET, cluster_id: clusterId } })).body.id;
  await call('POST', `${h.base}/infra-envs/${infraEnvId}/hosts`, { body: { host_id: hostId } });
  // The registration's refresh runs off the agent's request; a person's read settles it, so the
  // snapshots below compare a quiet database.
  await call('GET', `${h.base}/clusters/${clusterId}`);
});
afterAll(async () => {
  await h?.stop();
});

const C = () => `${h.base}/clusters/${clusterId}`;
const H = () => `${h.base}/infra-envs/${infraEnvId}/hosts/${hostId}`;

type Case = [string, () => [string, string, { body?: unknown; raw?: string }], number, RegExp];

const cases: Case[] = [
  ['malformed JSON', () => ['POST', `${h.base}/clusters`, { raw: '{"name": "x",' }], 400, /not valid JSON/],
  ['missing required field', () => ['POST', `${h.base}/clusters`, { body: { name: 'x', openshift_version: '1.31' } }], 400, /pull_secret/],
  ['wrong type', () => ['POST', `${h.base}/clusters`, { body: { name: 42, openshift_version: '1.31', pull_secret: PULL_SECRET } }], 400, /name/],
  ['unknown enum value', () => ['PATCH', C(), { body: { high_availability_mode: 'Sometimes' } }], 400, /high_availability_mode/],
  ['unknown field', () => ['PATCH', C(), { body: { nmae: 'typo' } }], 400, /nmae/],
  ['unknown release', () => ['POST', `${h.base}/clusters`, { body: { name: 'x', openshift_version: '0.9', pull_secret: PULL_SECRET } }], 400, /openshift_version.*not a release/],
  ['bad cluster name', () => ['POST', `${h.base}/clusters`, { body: { name: 'Bad_Name', openshift_version: '1.31', pull_secret: PULL_SECRET } }], 400, /name/],
  ['pull secret not JSON', () => ['POST', `${h.base}/clusters`, { body: { name: 'x', openshift_version: '1.31', pull_secret: 'hunter2' } }], 400, /pull_secret: must be JSON/],
  ['invalid CIDR', () => ['PATCH', C(), { body: { machine_networks: [{ cidr: '10.0.0.0/33' }] } }], 400, /machine_networks/],
  ['invalid VIP', () => ['PATCH', C(), { body: { api_vips: [{ ip: '10.0.0.300' }] } }], 400, /api_vips/],
  ['VIP outside the machine network', () => ['PATCH', C(), { body: { api_vips: [{ ip: '192.168.1.5' }] } }], 400, /api_vips\[0\]\.ip: 192\.168\.1\.5 is not inside any machine network/],
  ['overlapping networks', () => ['PATCH', C(), { body: { service_networks: [{ cidr: '10.0.0.0/16' }] } }], 400, /overlaps/],
  ['bad base domain', () => ['PATCH', C(), { body: { base_dns_domain: 'not a domain' } }], 400, /base_dns_domain/],
  ['bad SSH key', () => ['PATCH', C(), { body: { ssh_public_key: 'ssh-rsa AAAAB3NzaC1lZDI1NTE5AAAA' } }], 400, /ssh_public_key/],
  ['bad hostname', () => ['PATCH', H(), { body: { host_name: 'Not_Valid!' } }], 400, /host_name/],
  ['localhost hostname', () => ['PATCH', H(), { body: { host_name: 'localhost' } }], 400, /host_name: "localhost" is not allowed/],
  ['bootstrap role', () => ['PATCH', H(), { body: { host_role: 'bootstrap' } }], 400, /host_role/],
  ['disk not in inventory', () => ['PATCH', H(), { body: { disks_selected_config: [{ id: '/dev/nope', role: 'install' }] } }], 400, /disks_selected_config\[0\]\.id/],
  ['unknown step type', () => ['POST', `${H()}/instructions`, { body: { step_type: 'format-everything', step_id: 'x', exit_code: 0, output: '' } }], 400, /step_type/],
  ['progress on a host that is not installing', () => ['PUT', `${H()}/progress`, { body: { current_stage: 'Installing' } }], 409, /not installing/],
  ['install on a cluster that is not ready', () => ['POST', `${C()}/actions/install`, {}], 409, /not ready/],
  ['reset on a cluster that never installed', () => ['POST', `${C()}/actions/reset`, {}], 409, /cannot be reset/],
  ['body over the size limit', () => ['PATCH', C(), { body: { ssh_public_key: 'x'.repeat(70000) } }], 413, /too large/],
  ['unknown cluster id', () => ['GET', `${h.base}/clusters/${randomUUID()}`, {}], 404, /not found/],
  ['malformed cluster id', () => ['GET', `${h.base}/clusters/not-a-uuid`, {}], 400, /cluster_id/],
  ['unknown host on reply', () => ['POST', `${h.base}/infra-envs/${infraEnvId}/hosts/${randomUUID()}/instructions`, { body: { step_type: 'inventory', step_id: 'x', exit_code: 0, output: '{}' } }], 404, /not found/],
  ['bad event limit', () => ['GET', `${h.base}/events?cluster_id=${clusterId}&limit=abc`, {}], 400, /limit/],
  ['bad manifest name', () => ['POST', `${C()}/manifests`, { body: { folder: 'manifests', file_name: '../etc/passwd', content: 'YQ==' } }], 400, /file_name/],
  ['manifest that is not YAML', () => ['POST', `${C()}/manifests`, { body: { folder: 'manifests', file_name: 'a.yaml', content: Buffer.from('a: [1, 2').toString('base64') } }], 400, /not valid YAML/],
  ['manifest download without file_name', () => ['GET', `${C()}/manifests/files?folder=manifests`, {}], 400, /file_name/],
  ['manifest download from an unknown folder', () => ['GET', `${C()}/manifests/files?folder=etc&file_name=a.yaml`, {}], 400, /folder/],
  ['manifest download of a file that does not exist', () => ['GET', `${C()}/manifests/files?file_name=nope.yaml`, {}], 404, /manifest manifests\/nope\.yaml/],
  ['install-config overrides that are not JSON', () => ['PATCH', `${C()}/install-config`, { body: '{not json' }], 400, /JSON/],
  ['ignition override that is not Ignition', () => ['PATCH', `${h.base}/infra-envs/${infraEnvId}`, { body: { ignition_config_override: '{"hello": 1}' } }], 400, /ignition_config_override/],
  ['static network with an unmapped NIC', () => ['PATCH', `${h.base}/infra-envs/${infraEnvId}`, { body: { static_network_config: [{ network_yaml: 'interfaces:\n  - name: eth0\n    type: ethernet\n', mac_interface_map: [] }] } }], 400, /static_network_config: host 0: interface eth0 has no entry/],
  ['unknown route', () => ['GET', `${h.base}/clusterz`, {}], 404, /.+/],
  // PostgreSQL cannot store U+0000: refused at the edge, naming the field.
  ['NUL in an infra-env name', () => ['PATCH', `${h.base}/infra-envs/${infraEnvId}`, { body: { name: 'ie\u00001' } }], 400, /body\.name: must not contain a NUL/],
  ['NUL in an NTP source', () => ['PATCH', C(), { body: { additional_ntp_source: 'pool\u0000.ntp.org' } }], 400, /body\.additional_ntp_source/],
  ['NUL in step output', () => ['POST', `${H()}/instructions`, { body: { step_type: 'inventory', step_id: 'x', output: '{"hostname":"a\u0000b"}' } }], 400, /body\.output/],
  ['NUL in a step error', () => ['POST', `${H()}/instructions`, { body: { step_type: 'ntp-synchronizer', step_id: 'x', exit_code: 1, error: 'bad\u0000' } }], 400, /body\.error/],
  ['NUL in a query', () => ['GET', `${h.base}/events?cluster_id=${clusterId}&categories=user%00`, {}], 400, /query\.categories/],
  // Inside a JSON document carried in a string, a NUL arrives escaped (\\u0000) and passes the edge's guard: checked once parsed.
  // A stored one failed every later read of the cluster (an inventory's hostname broke its refresh), or the request itself (event props).
  ['NUL escaped in an inventory\'s hostname', () => ['POST', `${H()}/instructions`, { body: { step_type: 'inventory', step_id: 'x', output: JSON.stringify({ hostname: 'a\u0000b', cpu: { count: 8 } }) } }], 400, /output\.hostname: must not contain a NUL/],
  ['NUL escaped in a step\'s JSON output', () => ['POST', `${H()}/instructions`, { body: { step_type: 'ntp-synchronizer', step_id: 'x', output: JSON.stringify({ ntp_sources: [{ source_name: 'pool\u0000', source_state: 'synced' }] }) } }], 400, /output\.ntp_sources\[0\]\.source_name: must not contain a NUL/],
  ['NUL escaped in event props', () => ['POST', `${h.base}/events`, { body: { cluster_id: clusterId, severity: 'info', message: 'm', event_time: new Date().toISOString(), props: JSON.stringify({ a: 'x\u0000' }) } }], 400, /props\.a: must not contain a NUL/],
  ['a kernel argument without operation or value', () => ['PATCH', `${h.base}/infra-envs/${infraEnvId}`, { body: { kernel_arguments: [{}] } }], 400, /kernel_arguments\[0\]: needs an operation/],
  ['a kernel argument without a value', () => ['PATCH', `${h.base}/infra-envs/${infraEnvId}`, { body: { kernel_arguments: [{ operation: 'append' }] } }], 400, /kernel_arguments\[0\]/],
  ['static network without mac_interface_map', () => ['PATCH', `${h.base}/infra-envs/${infraEnvId}`, { body: { static_network_config: [{ network_yaml: 'interfaces:\n  - name: eth0\n    type: ethernet\n' }] } }], 400, /interface eth0 has no entry in mac_interface_map/],
  ['static network with an empty network_yaml', () => ['PATCH', `${h.base}/infra-envs/${infraEnvId}`, { body: { static_network_config: [{ network_yaml: '', mac_interface_map: [] }] } }], 400, /network_yaml is empty/],
  ['static network whose YAML is not a mapping', () => ['PATCH', `${h.base}/infra-envs/${infraEnvId}`, { body: { static_network_config: [{ network_yaml: '- a\n- b\n', mac_interface_map: [] }] } }], 400, /nmstate document/],
  ['disk encryption, which Landfall does not do', () => ['PATCH', C(), { body: { disk_encryption: { enable_on: 'all', mode: 'tpmv2' } } }], 400, /disk_encryption\.enable_on: "all" is not supported/],
  ['poll timestamp beyond any date', () => ['GET', `${H()}/instructions?timestamp=9223372036854775807`, {}], 400, /timestamp/],
  ['event limit beyond 32 bits', () => ['GET', `${h.base}/events?cluster_id=${clusterId}&limit=99999999999999999999`, {}], 400, /limit/],
  ['event offset beyond 32 bits', () => ['GET', `${h.base}/events?cluster_id=${clusterId}&offset=9223372036854775808`, {}], 400, /offset/],
  ['event stream cursor beyond bigint', () => ['GET', `${h.base}/events/stream?cluster_id=${clusterId}&after=99999999999999999999`, {}], 400, /after/],
  ['exit code beyond 32 bits', () => ['POST', `${H()}/instructions`, { body: { step_type: 'ntp-synchronizer', step_id: 'x', exit_code: 2 ** 31, output: '' } }], 400, /exit_code/],
];

describe('bad input', () => {
  it.each(cases)('%s → clear 4xx, nothing written', async (_name, req, status, reason) => {
    const before = await snapshot();
    const [method, url, opts] = req();
    const r = await call(method, url, opts);
    expect(r.status).toBe(status);
    expect(r.body).toMatchObject({ kind: 'Error', id: status, code: String(status), href: '' });
    expect(r.body.reason).toMatch(reason);
    expect(await snapshot()).toEqual(before);
  });

  it('takes every name the document\'s pattern allows, such as "0"', async () => {
    const r = await call('POST', `${h.base}/clusters`, { body: { name: '0', openshift_version: '1.31', pull_secret: PULL_SECRET } });
    expect(r.status).toBe(201);
    expect((await call('DELETE', `${h.base}/clusters/${r.body.id}`)).status).toBe(204);
  });

  it('never answers 500 to a burst of random bodies', async () => {
    const bodies = [null, [], 'x', 1, true, { name: {} }, { pull_secret: [] }, { cluster_networks: 'x' }, { api_vips: [{}] }, { api_vips: [{ ip: 5 }] }, { host_id: 'nope' }];
    for (const b of bodies) {
      for (const [m, u] of [['POST', `${h.base}/clusters`], ['PATCH', C()], ['POST', `${h.base}/infra-envs`], ['PATCH', H()], ['POST', `${H()}/instructions`]] as const) {
        const r = await call(m, u, { raw: JSON.stringify(b) });
        if (r.status < 400) throw new Error(`${m} ${u} accepted ${JSON.stringify(b)} with ${r.status}`);
        expect(r.status).toBeLessThan(500);
      }
    }
  });
});

/** What the Schemathesis suite (test/fuzz) found, each reproduced here. */
describe('found by fuzzing', () => {
  it('takes null for the infra-env fields it passes through as "not given": no null the response schema refuses (was a 500 on every later GET)', async () => {
    const r = await call('PATCH', `${h.base}/infra-envs/${infraEnvId}`, { body: { additional_trust_bundle: null, proxy: { http_proxy: null, https_proxy: 'http://proxy.example.com:3128', no_proxy: '' } } });
    expect(r.status).toBe(201);
    expect(r.body.additional_trust_bundle).not.toBeNull();
    expect((await call('GET', `${h.base}/infra-envs/${infraEnvId}`)).status).toBe(200);
    expect((await call('GET', `${h.base}/infra-envs?cluster_id=${clusterId}`)).status).toBe(200);
  });

  it('takes null for platform and fencing_credentials, which the document allows (they were 400s from the validator)', async () => {
    const c = await call('POST', `${h.base}/clusters`, { body: { name: 'null-platform', openshift_version: '1.31', pull_secret: PULL_SECRET, platform: null } });
    expect(c.status).toBe(201);
    expect((await call('GET', `${h.base}/clusters/${c.body.id}`)).status).toBe(200);
    expect((await call('DELETE', `${h.base}/clusters/${c.body.id}`)).status).toBe(204);
    expect((await call('PATCH', H(), { body: { fencing_credentials: null } })).status).toBe(201);
  });

  it('reads an empty query value as not given where the schema admits it, as assisted-service does, and refuses it where it does not', async () => {
    const hosts = await call('GET', `${C()}/hosts?status=`);
    expect(hosts.status).toBe(200);
    expect(hosts.body.map((x: { id: string }) => x.id)).toContain(hostId);
    expect((await call('GET', `${h.base}/clusters?owner=&with_hosts=&ams_subscription_ids=`)).status).toBe(200);
    expect((await call('GET', `${h.base}/events?cluster_id=${clusterId}&categories=&message=`)).status).toBe(200);
    // A space spelt `+` (form encoding, as Python's requests sends it) and characters encodeURIComponent leaves
    // as they are were refused as unencoded reserved characters.
    expect((await call('GET', `${h.base}/events?cluster_id=${clusterId}&message=Registered+cluster`)).status).toBe(200);
    expect((await call('GET', `${h.base}/events?cluster_id=${clusterId}&message=it's%20(fine)!`)).status).toBe(200);
    const role = await call('GET', `${C()}/hosts?role=`);
    expect(role.status).toBe(400);
    expect(role.body.reason).toMatch(/role/);
    expect((await call('GET', `${h.base}/infra-envs?cluster_id=`)).status).toBe(400);
  });

  it('answers a request with no body where one is required with a 400 naming the body (was a 415 about an undefined media type)', async () => {
    const r = await call('PUT', `${H()}/progress`);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ kind: 'Error', reason: 'body: required', details: { field: 'body' } });
    // A literal path beside a templated one (/v2/clusters/import, /v2/clusters/{cluster_id}) is told apart.
    const imported = await call('POST', `${h.base}/clusters/import`);
    expect(imported.status).toBe(400);
    expect(imported.body.reason).not.toMatch(/media type/);
  });

  it('names the allowed methods in a 405 (RFC 9110)', async () => {
    const r = await call('DELETE', `${h.base}/clusters`);
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('GET, POST');
  });

  it('sends every documented download as application/octet-stream, as assisted-service does', async () => {
    for (const name of ['discovery.ign', 'ipxe-script', 'static-network-config']) {
      const r = await call('GET', `${h.base}/infra-envs/${infraEnvId}/downloads/files?file_name=${name}`);
      expect([name, r.status, r.headers.get('content-type')]).toEqual([name, 200, 'application/octet-stream']);
    }
    for (const name of ['install-config.yaml', 'custom_manifests.json', 'custom_manifests.yaml']) {
      const r = await call('GET', `${C()}/downloads/files?file_name=${name}`);
      expect([name, r.status, r.headers.get('content-type')]).toEqual([name, 200, 'application/octet-stream']);
    }
  });
});
