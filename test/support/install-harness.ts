/**
 * Everything an install needs, for real: a Temporal dev server, the API
 * (in-process, response validation on), the worker (in-process), and a fleet
 * of simulated hosts driving the real agent loop.
 */
import path from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import type { QueryDefinition } from '@temporalio/workflow';
import { runFleet, type FleetReport } from '../../agent/fleet';
import { parseConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { startWorker, type RunningWorker } from '../../src/worker/worker';
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from './api-harness';
import { eventually, startTestTemporal, tempDir } from './services';
import { startWorkerReplicas, testReplicas } from './replicas';

export const FIXTURE_PROFILES = path.resolve(__dirname, '../fixtures/profiles');

export interface InstallHarness {
  api: ApiHarness;
  temporal: Awaited<ReturnType<typeof startTestTemporal>>;
  worker: RunningWorker;
  client: Client;
  /** Stops the worker, runs `meanwhile` with none running, then starts a fresh one (single-process mode). */
  withoutWorker(meanwhile: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

export async function startInstallHarness(env: Record<string, string> = {}): Promise<InstallHarness> {
  const temporal = await startTestTemporal();
  const objects = tempDir('install-objects');
  const api = await startApiHarness({ env: { TEMPORAL_ADDRESS: temporal.address, STORAGE_LOCAL_DIR: objects, ...env } });
  const cfg = parseConfig({ DATABASE_URL: api.pg.url, TEMPORAL_ADDRESS: temporal.address, STORAGE_LOCAL_DIR: objects, HOST_MONITOR_INTERVAL_MS: '60000', ...env });
  const replicas = testReplicas();
  // N worker processes, or one worker in this process.
  let worker: RunningWorker =
    replicas > 1
      ? await startWorkerReplicas({ ...cfg, log: { level: 'info', format: 'json' } }, replicas, new URL(api.pg.url).pathname.slice(1))
      : await startWorker(cfg, createLogger({ log: { level: 'silent', format: 'json' } }, 'worker'));
  const client = new Client({ connection: await Connection.connect({ address: temporal.address }) });
  return {
    api,
    temporal,
    get worker() {
      return worker;
    },
    client,
    async withoutWorker(meanwhile) {
      await worker.shutdown();
      try {
        await meanwhile();
      } finally {
        worker = await startWorker(cfg, createLogger({ log: { level: 'silent', format: 'json' } }, 'worker'));
      }
    },
    async stop() {
      await client.connection.close();
      await worker.shutdown();
      await api.stop();
      await temporal.stop();
    },
  };
}

export interface ReadyCluster {
  clusterId: string;
  infraEnvId: string;
  stop: AbortController;
  fleet: Promise<FleetReport>;
  report: () => Promise<FleetReport>;
}

/** A cluster whose simulated fleet has brought it to `ready`. */
export async function readyCluster(h: InstallHarness, name: string, mix: string, count: number, body: Record<string, unknown> = {}): Promise<ReadyCluster> {
  const single = body.control_plane_count === 1 || body.high_availability_mode === 'None';
  const cluster = (
    await call('POST', `${h.api.base}/clusters`, {
      body: { name, openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com', machine_networks: [{ cidr: '192.168.127.0/24' }], ...(single ? {} : { api_vips: [{ ip: '192.168.127.250' }], ingress_vips: [{ ip: '192.168.127.251' }] }), ...body },
    })
  ).body;
  const ie = (await call('POST', `${h.api.base}/infra-envs`, { body: { name: `${name}-ie`, pull_secret: PULL_SECRET, cluster_id: cluster.id } })).body;
  return bootFleet(h, cluster.id, ie.id, name, mix, count);
}

/** Boots (again) the simulated hosts of a cluster's infra-env and waits for `ready`. The same name gives the same host ids. */
export async function bootFleet(h: InstallHarness, clusterId: string, infraEnvId: string, name: string, mix: string, count: number): Promise<ReadyCluster> {
  const cluster = { id: clusterId };
  const ie = { id: infraEnvId };
  const stop = new AbortController();
  const fleet = runFleet({ serviceUrl: h.api.url, infraEnvId: ie.id, count, mix, seed: name, durationSeconds: 300, pollIntervalSeconds: 0.5, rampSeconds: 0 }, stop.signal);
  await eventually(async () => (await call('GET', `${h.api.base}/clusters/${cluster.id}`)).body.status === 'ready', 40000, `cluster ${name} ready`).catch(async (e) => {
    const c = (await call('GET', `${h.api.base}/clusters/${cluster.id}`)).body;
    throw new Error(`${e.message}: ${c.status} ${c.validation_remediation} ${c.hosts.map((x: { status: string; validation_remediation: string }) => `${x.status} ${x.validation_remediation}`).join(' | ')}`);
  });
  return { clusterId: cluster.id, infraEnvId: ie.id, stop, fleet, report: async () => (stop.abort(), fleet) };
}

export async function waitClusterStatus(h: InstallHarness, clusterId: string, statuses: string[], timeoutMs = 60000) {
  return eventually(async () => {
    const c = (await call('GET', `${h.api.base}/clusters/${clusterId}`)).body;
    return statuses.includes(c.status) ? c : undefined;
  }, timeoutMs, `cluster ${statuses.join(' or ')}`).catch(async (e) => {
    const c = (await call('GET', `${h.api.base}/clusters/${clusterId}`)).body;
    throw new Error(`${e.message}: ${c.status} (${c.status_info}); hosts ${c.hosts.map((x: { status: string; status_info: string; progress?: { current_stage?: string } }) => `${x.status}/${x.progress?.current_stage ?? '-'}: ${x.status_info}`).join(' | ')}`);
  });
}

/**
 * Waits for a workflow's progress query to answer `phase`: the service commits a host's or cluster's row before the
 * workflow hears of it (a signal, or its activity's completion), so the row can be there first. The progress read.
 */
export async function waitWorkflowPhase<P extends { phase: string }>(handle: WorkflowHandle, query: QueryDefinition<P, []>, phase: string, what: string, timeoutMs = 20000): Promise<P> {
  return eventually(async () => {
    const p = await handle.query(query);
    return p.phase === phase ? p : undefined;
  }, timeoutMs, what);
}
