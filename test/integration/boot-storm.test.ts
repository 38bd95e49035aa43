/**
 * A boot storm, small: 200 hosts register and post their first inventory
 * concurrently into four clusters ready to validate, while some agents
 * retry their registration mid-storm as the real agent does after a timeout
 * (the same host id again: one retry after giving up on an answer that the
 * service may still be working on, one racing the first request outright).
 * No host may be lost or registered twice, no request may fail with a 5xx,
 * and every host must leave `discovering` with its validations computed
 * within a bounded time after the last one arrived (bench/boot-storm.ts
 * measures the same at 1,000-20,000 hosts against a 5 s target; this bound
 * is loose because the test shares a loaded machine).
 */
import { inventoryFor } from '../../bench/inventory';
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';

const HOSTS = 200;
const PER_CLUSTER = 50;
const CONCURRENCY = 32;
/** Every host out of discovering and validated within this long after the last inventory was answered. */
const SETTLE_BOUND_MS = 20_000;

let h: ApiHarness;
beforeAll(async () => {
  h = await startApiHarness();
});
afterAll(async () => {
  await h?.stop();
});

const hostId = (i: number) => `b5000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;

/** A registration the agent gave up on after `ms` (the service may still complete it), as on a client timeout. */
async function abandonedRegistration(url: string, id: string, ms: number): Promise<void> {
  await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ host_id: id, discovery_agent_version: 'storm-test:1' }), signal: AbortSignal.timeout(ms) })
    .then((r) => r.text())
    .catch(() => undefined);
}

describe('boot storm', () => {
  it('registers 200 hosts with retried registrations: none lost or duplicated, every host validated soon after the last arrives', async () => {
    const clusters = HOSTS / PER_CLUSTER;
    const infraEnvs: string[] = [];
    for (let k = 0; k < clusters; k++) {
      const c = await call('POST', `${h.base}/clusters`, { body: { name: `storm-${k}`, openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com', machine_networks: [{ cidr: '10.20.0.0/16' }], api_vips: [{ ip: '10.20.255.250' }], ingress_vips: [{ ip: '10.20.255.251' }] } });
      expect(c.status).toBe(201);
      const ie = await call('POST', `${h.base}/infra-envs`, { body: { name: `storm-${k}-ie`, pull_secret: PULL_SECRET, cluster_id: c.body.id } });
      expect(ie.status).toBe(201);
      infraEnvs.push(ie.body.id);
    }
    const ids = Array.from({ length: HOSTS }, (_, i) => hostId(i));
    const ieOf = (i: number) => infraEnvs[Math.floor(i / PER_CLUSTER)]!;
    const statuses: Record<string, number> = {};
    const count = (what: string, status: number) => (statuses[`${what} ${status}`] = (statuses[`${what} ${status}`] ?? 0) + 1);

    /** As the agent does: register until the service answers 201 (a bounded number of tries here). */
    const register = async (i: number) => {
      for (let attempt = 0; attempt < 5; attempt++) {
        const r = await call('POST', `${h.base}/infra-envs/${ieOf(i)}/hosts`, { body: { host_id: ids[i], discovery_agent_version: 'storm-test:1' } });
        count('register', r.status);
        if (r.status === 201) {
          expect(r.body.id).toBe(ids[i]);
          return;
        }
      }
      throw new Error(`host ${i} was never registered: ${JSON.stringify(statuses)}`);
    };

    let next = 0;
    let lastArrival = 0;
    const retried = { abandoned: 0, racing: 0 };
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < HOSTS) {
          const i = next++;
          const url = `${h.base}/infra-envs/${ieOf(i)}/hosts`;
          if (i % 10 === 3) {
            // Gave up waiting (a few ms: the request is usually still in the service), then registers again.
            retried.abandoned++;
            await abandonedRegistration(url, ids[i]!, 2 + (i % 7));
            await register(i);
          } else if (i % 10 === 7) {
            // The retry races the first attempt: both with the same host id, at once.
            retried.racing++;
            await Promise.all([register(i), register(i)]);
          } else {
            await register(i);
          }
          const inv = await call('POST', `${h.base}/infra-envs/${ieOf(i)}/hosts/${ids[i]}/instructions`, {
            body: { step_type: 'inventory', step_id: `inventory-${i.toString(16).padStart(8, '0')}`, exit_code: 0, output: inventoryFor(`storm-${String(i).padStart(4, '0')}`, i) },
          });
          count('inventory', inv.status);
          expect(inv.status).toBe(204);
          lastArrival = Date.now();
        }
      }),
    );
    expect(retried.abandoned).toBe(20);
    expect(retried.racing).toBe(20);
    // No answer was a server error; the racing retries were answered 201 (or 409, after which the agent retried).
    expect(Object.keys(statuses).filter((k) => !/ (201|204|409)$/.test(k))).toEqual([]);

    // Every host once, with exactly the ids that registered, each in its own infra-env.
    const rows = await h.db('hosts').select<Array<{ id: string; infra_env_id: string }>>('id', 'infra_env_id');
    expect(rows).toHaveLength(HOSTS);
    expect(rows.map((r) => r.id).sort()).toEqual([...ids].sort());
    for (const r of rows) expect(r.infra_env_id).toBe(ieOf(ids.indexOf(r.id)));

    // Settled: nothing discovering, and every host's validations computed from its inventory.
    const settled = async () => {
      const hosts = await h.db('hosts').select<Array<{ id: string; status: string; validations: string | null }>>('id', 'status', h.db.raw("doc->>'validations_info' as validations"));
      const pending = hosts.filter((x) => {
        if (x.status === 'discovering') return true;
        const info = JSON.parse(x.validations ?? '{}') as Record<string, Array<{ id: string; status: string }>>;
        return Object.values(info).flat().find((v) => v.id === 'has-inventory')?.status !== 'success';
      });
      return { hosts, pending };
    };
    let state = await settled();
    while (state.pending.length && Date.now() - lastArrival < SETTLE_BOUND_MS) {
      await new Promise((r) => setTimeout(r, 100));
      state = await settled();
    }
    const settleMs = Date.now() - lastArrival;
    expect({ pending: state.pending.map((x) => `${x.id} ${x.status}`).slice(0, 5), within: settleMs <= SETTLE_BOUND_MS }).toEqual({ pending: [], within: true });
    // The clusters have machine networks and VIPs: with an inventory each host is past discovering and pending-for-input.
    expect(state.hosts.filter((x) => ['discovering', 'pending-for-input'].includes(x.status))).toEqual([]);

    // The API's own view agrees: each cluster lists its 50 hosts, once each.
    for (let k = 0; k < clusters; k++) {
      const listed = await call<Array<{ id: string; status: string }>>('GET', `${h.base}/infra-envs/${infraEnvs[k]}/hosts`);
      expect(listed.status).toBe(200);
      expect(new Set(listed.body.map((x) => x.id)).size).toBe(PER_CLUSTER);
      expect(listed.body).toHaveLength(PER_CLUSTER);
    }
    process.stdout.write(`boot-storm test: answers ${JSON.stringify(statuses)}; settled ${settleMs} ms after the last inventory\n`);
  }, 90_000);
});
