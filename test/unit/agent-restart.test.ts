/**
 * An agent started again after it was killed in the middle of an install
 * step: before the host's reboot the disk may be half-written, and the step
 * is reported failed with where it stopped; past the reboot (a simulated host
 * playing its installed cluster's controller) the installed side carries on
 * and the step is answered as it ends. Against a small HTTP service that
 * records what the agent sent.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent as Dispatcher } from 'undici';
import { HostAgent } from '../../agent/agent';
import { SimulatedExecutor, SimulatedNetwork, simulatedIdentity } from '../../agent/executors/simulated';
import { loadProfile } from '../../agent/profiles';
import { ServiceClient } from '../../agent/service-client';
import { StartedSteps } from '../../agent/started-steps';
import { tempDir } from '../support/services';

interface Seen {
  method: string;
  path: string;
  body: Record<string, unknown>;
}

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  let text = '';
  for await (const chunk of req) text += String(chunk);
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

/** The service's side: the cluster is finalizing and lists one monitored operator; every report is taken. */
async function service(): Promise<{ server: Server; url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    void body(req).then((b) => {
      const p = (req.url ?? '').replace(/^\/api\/assisted-install\/v2/, '');
      seen.push({ method: req.method ?? '', path: p, body: b });
      const json = (status: number, v: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(v));
      };
      if (req.method === 'POST' && /\/infra-envs\/ie\/hosts$/.test(p)) return json(201, { id: b.host_id });
      if (req.method === 'GET' && p.includes('/instructions')) return json(200, { instructions: [], next_instruction_seconds: 1 });
      if (req.method === 'GET' && p.startsWith('/clusters/c1/monitored-operators')) return json(200, [{ name: 'console' }]);
      if (req.method === 'GET' && p.startsWith('/clusters/c1')) return json(200, { id: 'c1', status: 'finalizing' });
      if (req.method === 'POST' && p.includes('/instructions')) return (res.writeHead(204), res.end());
      return json(200, {});
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

async function restartedAgent(ledger: (steps: StartedSteps) => void): Promise<{ seen: Seen[]; after: StartedSteps }> {
  const { server, url, seen } = await service();
  const identity = { ...simulatedIdentity('restart', 0), hostname: 'h0' };
  const dir = tempDir('agent-restart');
  const outboxDir = `${dir}/${identity.id}`;
  // What the killed run left on disk.
  ledger(StartedSteps.inDir(outboxDir, 'started-ie'));
  const cfg = { serviceUrl: url, infraEnvId: 'ie', agentToken: '', agentVersion: 't', pollIntervalSeconds: 1, outboxDir };
  const profile = { ...loadProfile('control-plane'), install: { stage_seconds: 0.05 } };
  const executor = new SimulatedExecutor(profile, identity, new SimulatedNetwork());
  const quiet = { info: () => undefined, warn: () => undefined };
  const agent = new HostAgent(cfg, executor, new ServiceClient(cfg, new Dispatcher(), 1), quiet, { writeStatus: false });
  const stop = new AbortController();
  const run = agent.run(stop.signal);
  try {
    // Until the interrupted step is answered.
    for (let i = 0; i < 100 && !seen.some((s) => s.method === 'POST' && s.path.endsWith('/instructions')); i++) await new Promise((r) => setTimeout(r, 50));
  } finally {
    stop.abort();
    await run.catch(() => undefined);
    server.close();
  }
  return { seen, after: StartedSteps.inDir(outboxDir, 'started-ie') };
}

const SNO_ARGS = { cluster_id: 'c1', role: 'master', control_plane_count: 1 };

describe('an agent restarted in the middle of an install step', () => {
  it('reports a step cut short before the reboot as failed, with the stage it stopped at, and runs nothing of it again', async () => {
    const { seen, after } = await restartedAgent((steps) => {
      steps.claim('install-a1');
      steps.stage('install-a1', 'Writing image to disk');
    });
    const replies = seen.filter((s) => s.method === 'POST' && s.path.endsWith('/instructions'));
    expect(replies).toHaveLength(1);
    expect(replies[0]!.body).toMatchObject({ step_type: 'install', step_id: 'install-a1', exit_code: 1 });
    expect(String(replies[0]!.body.error)).toMatch(/at stage "Writing image to disk".*the disk may be half-written; retry the host/);
    // No stage reported again: the step is not run a second time.
    expect(seen.filter((s) => s.path.endsWith('/progress'))).toEqual([]);
    expect(after.interrupted()).toEqual([]);
  });

  it('carries on past the reboot: the stages left, the controller reports, then the step answered as done', async () => {
    const { seen, after } = await restartedAgent((steps) => {
      steps.claim('install-a1');
      steps.stage('install-a1', 'Rebooting');
      steps.rebooted('install-a1', SNO_ARGS);
    });
    // A single-node host's stages after Rebooting, in order, and none before it.
    expect(seen.filter((s) => s.path.endsWith('/progress')).map((s) => s.body.current_stage)).toEqual(['Joined', 'Done']);
    // The controller's side: the operator the service monitors is reported available.
    expect(seen.filter((s) => s.method === 'PUT' && s.path === '/clusters/c1/monitored-operators').map((s) => s.body)).toEqual([expect.objectContaining({ name: 'console', status: 'available' })]);
    const replies = seen.filter((s) => s.method === 'POST' && s.path.endsWith('/instructions'));
    expect(replies.map((r) => r.body)).toEqual([expect.objectContaining({ step_type: 'install', step_id: 'install-a1', exit_code: 0 })]);
    expect(after.interrupted()).toEqual([]);
  });

  it('resumes after the last stage the killed run reported, not from the reboot again', async () => {
    const { seen } = await restartedAgent((steps) => {
      steps.claim('install-a1');
      steps.rebooted('install-a1', SNO_ARGS);
      steps.stage('install-a1', 'Joined');
    });
    expect(seen.filter((s) => s.path.endsWith('/progress')).map((s) => s.body.current_stage)).toEqual(['Done']);
  });
});
