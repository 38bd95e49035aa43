import { runStep, STEP_TIMEOUT_MS, type StepContext } from '../../agent/steps';
import { SimulatedExecutor, SimulatedNetwork, simulatedIdentity } from '../../agent/executors/simulated';
import { loadProfile, expandMix, listProfiles } from '../../agent/profiles';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { backoffMs, retryAfterMsOf, ServiceClient } from '../../agent/service-client';

const ctxFor = (profile = 'control-plane'): StepContext & { executor: SimulatedExecutor } => {
  const id = simulatedIdentity('seed', 0);
  return {
    executor: new SimulatedExecutor(loadProfile(profile), { ...id, hostname: 'h0' }, new SimulatedNetwork()),
    reportProgress: async () => undefined,
    uploadLogs: async () => undefined,
  };
};

describe('agent step runner', () => {
  it('answers an unknown step type with a non-zero exit and an error text', async () => {
    const r = await runStep({ step_type: 'format-everything', step_id: 'x' }, ctxFor());
    expect(r.exit_code).toBe(2);
    expect(r.error).toMatch(/unsupported step type "format-everything"/);
  });

  it('answers malformed arguments with a non-zero exit', async () => {
    const r = await runStep({ step_type: 'ntp-synchronizer', step_id: 'x', args: ['{not json'] }, ctxFor());
    expect(r.exit_code).toBe(2);
    expect(r.error).toMatch(/not JSON/);
  });

  it('cuts off a step that hangs', async () => {
    const ctx = ctxFor();
    ctx.executor.ntpSynchronizer = () => new Promise(() => undefined);
    const saved = STEP_TIMEOUT_MS['ntp-synchronizer'];
    STEP_TIMEOUT_MS['ntp-synchronizer'] = 100;
    try {
      const started = Date.now();
      const r = await runStep({ step_type: 'ntp-synchronizer', step_id: 'x', args: ['{}'] }, ctx);
      expect(r.exit_code).toBe(124);
      expect(r.error).toMatch(/timed out/);
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      STEP_TIMEOUT_MS['ntp-synchronizer'] = saved!;
    }
  });

  it('returns step output as a JSON string', async () => {
    const r = await runStep({ step_type: 'inventory', step_id: 'x', args: ['h'] }, ctxFor('worker'));
    expect(r.exit_code).toBe(0);
    const inv = JSON.parse(r.output);
    expect(inv.cpu.count).toBe(4);
    expect(inv.disks).toHaveLength(2);
  });
});

describe('simulated profiles', () => {
  it('ships the six fault and role profiles, all parseable', () => {
    expect(listProfiles()).toEqual(expect.arrayContaining(['control-plane', 'worker', 'undersized', 'slow-disk', 'skewed-clock', 'isolated']));
    for (const p of listProfiles()) expect(loadProfile(p).name).toBe(p);
  });

  it('turn into what the executor reports', async () => {
    expect((await ctxFor('undersized').executor.inventory()).disks[0]!.installation_eligibility.eligible).toBe(false);
    expect((await ctxFor('slow-disk').executor.diskSpeedCheck({ path: '/dev/sda' })).io_sync_duration).toBe(35);
    expect(ctxFor('skewed-clock').executor.clockOffsetSeconds()).toBe(5400);
    expect((await ctxFor('skewed-clock').executor.ntpSynchronizer({ ntp_source: 'a' })).ntp_sources[0]!.source_state).toBe('unreachable');
  });

  it('expands a mix in proportion, interleaved', () => {
    expect(expandMix('a:3,b:1', 8)).toEqual(['a', 'b', 'a', 'b', 'a', 'a', 'a', 'a']);
    expect(expandMix('a,b,c', 3)).toEqual(['a', 'b', 'c']);
    expect(() => expandMix('a:0', 2)).toThrow(/bad profile mix/);
  });

  it('backs off with full jitter under a cap', () => {
    expect(backoffMs(3, 1000, 60000, () => 0.999)).toBe(7992);
    expect(backoffMs(20, 1000, 60000, () => 0.5)).toBe(30000);
  });

  it('reads Retry-After in seconds, capped, and nothing else', () => {
    expect(retryAfterMsOf('7')).toBe(7000);
    expect(retryAfterMsOf('9999')).toBe(120_000);
    expect(retryAfterMsOf(null)).toBe(0);
    expect(retryAfterMsOf('Wed, 21 Oct 2026 07:28:00 GMT')).toBe(0);
    expect(retryAfterMsOf('-1')).toBe(0);
  });

  it('waits the Retry-After of a service at capacity before it tries again', async () => {
    const seen: number[] = [];
    const server = createServer((req, res) => {
      seen.push(Date.now());
      if (seen.length === 1) {
        res.writeHead(503, { 'Retry-After': '2', 'content-type': 'application/json' });
        res.end('{"kind":"Error","code":"503","reason":"at capacity"}');
      } else res.end('{}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const cfg = { serviceUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, infraEnvId: 'x', agentToken: '', agentVersion: 't' };
      const answer = await new ServiceClient(cfg, new Agent(), 1).request('GET', '/x');
      expect(answer.status).toBe(200);
      expect(seen).toHaveLength(2);
      // Its own backoff for a first retry is at most 1 s: the wait is the service's.
      expect(seen[1]! - seen[0]!).toBeGreaterThanOrEqual(1950);
    } finally {
      server.close();
    }
  });
});
