/**
 * The stack the fuzz suite runs against, for real: Temporal, PostgreSQL, the
 * API (AUTH_TYPE=local, response validation on) and the worker, with seeded
 * resources so that generated requests reach the code behind the 404:
 * - chain 0: a three-node cluster made ready by a simulated fleet (the real
 *   agent loop, simulated executors) that keeps polling during the run, and a
 *   BMC enrolment with a simulated BMC;
 * - chain 1: a single-node cluster with one registered host that never sent an inventory;
 * - chain 2: an infra-env bound to no cluster, with one registered host.
 * A seeder endpoint on loopback makes throw-away chains for DELETEs to remove.
 */
import { createServer, type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { runFleet } from '../../agent/fleet';
import { call, PULL_SECRET } from '../support/api-harness';
import { startInstallHarness, type InstallHarness } from '../support/install-harness';
import { buildSyntheticLiveIso, xorrisoAvailable } from '../support/live-iso';
import { eventually } from '../support/services';
import type { Chain } from './fuzz-run';

export interface FuzzStack {
  h: InstallHarness;
  userToken: string;
  /** The agent token of chain 0's infra-env. */
  agentToken: string;
  chains: Chain[];
  seeder: string;
  stop(): Promise<void>;
}

const USER = 'fuzz';

export async function startFuzzStack(): Promise<FuzzStack> {
  // A small live ISO as the base image: discovery-image URLs and BMC enrolments need one.
  if (!xorrisoAvailable()) throw new Error('xorriso is missing (scripts/install-system-tools.sh installs it; npm test runs it)');
  const iso = await buildSyntheticLiveIso({ fillerBytes: 1024 * 1024, name: 'fuzz.iso' });
  const h = await startInstallHarness({ AUTH_TYPE: 'local', BASE_ISO_PATH: iso.path });
  const stopFleet = new AbortController();
  try {
    return await seed(h, stopFleet);
  } catch (err) {
    stopFleet.abort();
    await h.stop();
    throw err;
  }
}

async function seed(h: InstallHarness, stopFleet: AbortController): Promise<FuzzStack> {
  const userToken = h.api.signer.sign({ use: 'user', sub: USER });
  const user = { Authorization: `Bearer ${userToken}` };
  const agentFor = (infraEnvId: string) => h.api.signer.sign({ use: 'agent', infra_env_id: infraEnvId });
  const ok = async (r: Promise<{ status: number; body: { id?: string }; text: string }>, what: string) => {
    const res = await r;
    if (res.status >= 300) throw new Error(`seeding: ${what} answered ${res.status}: ${res.text}`);
    return res.body;
  };
  const createCluster = (name: string, body: Record<string, unknown>) =>
    ok(call('POST', `${h.api.base}/clusters`, { headers: user, body: { name, openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com', ...body } }), `cluster ${name}`);
  const createInfraEnv = (name: string, clusterId?: string) =>
    ok(call('POST', `${h.api.base}/infra-envs`, { headers: user, body: { name, pull_secret: PULL_SECRET, ...(clusterId ? { cluster_id: clusterId } : {}) } }), `infra-env ${name}`);
  const registerHost = async (infraEnvId: string) => {
    const id = randomUUID();
    await ok(call('POST', `${h.api.base}/infra-envs/${infraEnvId}/hosts`, { headers: { 'X-Secret-Key': agentFor(infraEnvId) }, body: { host_id: id, discovery_agent_version: 'fuzz-seed' } }), 'host');
    return id;
  };

  // Chain 0: ready, with hosts that keep reporting.
  const c0 = await createCluster('fuzz-ready', { machine_networks: [{ cidr: '192.168.127.0/24' }], api_vips: [{ ip: '192.168.127.250' }], ingress_vips: [{ ip: '192.168.127.251' }] });
  const ie0 = await createInfraEnv('fuzz-ready-ie', c0.id);
  const fleet = runFleet(
    { serviceUrl: h.api.url, infraEnvId: ie0.id!, agentToken: agentFor(ie0.id!), count: 3, mix: 'control-plane:3', seed: 'fuzz', durationSeconds: 3600, pollIntervalSeconds: 1, rampSeconds: 0 },
    stopFleet.signal,
  );
  await eventually(async () => (await call('GET', `${h.api.base}/clusters/${c0.id}`, { headers: user })).body.status === 'ready', 60000, 'the fuzz cluster ready');
  const hosts0 = (await call('GET', `${h.api.base}/infra-envs/${ie0.id}/hosts`, { headers: user })).body as Array<{ id: string }>;
  const bmc = await ok(
    call('POST', `${h.api.base}/infra-envs/${ie0.id}/bmc-hosts`, { headers: user, body: { bmc_address: 'simulated://fuzz-rack-u01', bmc_credentials: { username: 'admin', password: 'fuzz-bmc-password' }, boot_mac_address: '52:54:00:fa:22:01' } }),
    'bmc host',
  );

  // Chain 1: single node, a host that never sent an inventory.
  const c1 = await createCluster('fuzz-sno', { control_plane_count: 1, high_availability_mode: 'None' });
  const ie1 = await createInfraEnv('fuzz-sno-ie', c1.id);
  const h1 = await registerHost(ie1.id!);

  // Chain 2: an infra-env bound to no cluster.
  const ie2 = await createInfraEnv('fuzz-unbound-ie');
  const h2 = await registerHost(ie2.id!);

  const chains: Chain[] = [
    { cluster_id: c0.id, infra_env_id: ie0.id!, host_ids: hosts0.map((x) => x.id), bmc_host_ids: [bmc.id!] },
    { cluster_id: c1.id, infra_env_id: ie1.id!, host_ids: [h1] },
    { infra_env_id: ie2.id!, host_ids: [h2] },
  ];

  // Throw-away chains for DELETEs: a cluster, its infra-env and one registered host.
  let made = 0;
  const seederServer: Server = createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/chains') return void res.writeHead(404).end();
    req.resume();
    const n = ++made;
    (async () => {
      const c = await createCluster(`fuzz-doomed-${n}`, {});
      const ie = await createInfraEnv(`fuzz-doomed-${n}-ie`, c.id);
      const host = await registerHost(ie.id!);
      return { cluster_id: c.id, infra_env_id: ie.id!, host_ids: [host] } satisfies Chain;
    })().then(
      (chain) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(chain)),
      (err: Error) => res.writeHead(500).end(err.message),
    );
  });
  await new Promise<void>((resolve) => seederServer.listen(0, '127.0.0.1', resolve));
  const seeder = `http://127.0.0.1:${(seederServer.address() as AddressInfo).port}`;

  return {
    h,
    userToken,
    agentToken: agentFor(ie0.id!),
    chains,
    seeder,
    async stop() {
      stopFleet.abort();
      await fleet.catch(() => undefined);
      await new Promise((resolve) => seederServer.close(resolve));
      await h.stop();
    },
  };
}
