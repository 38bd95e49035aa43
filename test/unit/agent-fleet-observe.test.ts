/**
 * What the fleet benches read from the simulated fleet: every answer an agent
 * gets, with its latency (the ServiceClient's observer), and the steps it was
 * handed, by type (AgentStats.steps, summed in the fleet's totals and report).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { runFleet, type FleetTotals } from '../../agent/fleet';

it('reports each answer with its latency and counts the steps handed out by type', async () => {
  const served = { polls: 0, replies: 0 };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      if (req.method === 'POST' && /\/hosts$/.test(req.url ?? '')) {
        res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id: JSON.parse(body).host_id }));
      } else if (req.method === 'GET' && /\/instructions/.test(req.url ?? '')) {
        served.polls++;
        // Two step types, one of them twice: the counts must say 1 and 2 per poll.
        const instructions = [
          { step_type: 'inventory', step_id: `inventory-${served.polls}`, args: [] },
          { step_type: 'made-up-step', step_id: `a-${served.polls}`, args: [] },
          { step_type: 'made-up-step', step_id: `b-${served.polls}`, args: [] },
        ];
        setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ next_instruction_seconds: 1, instructions })), 5);
      } else if (req.method === 'POST' && /\/instructions$/.test(req.url ?? '')) {
        served.replies++;
        res.writeHead(204).end();
      } else {
        res.writeHead(404).end('{}');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const seen: Array<{ method: string; path: string; status: number; ms: number }> = [];
  let read: (() => FleetTotals) | undefined;
  try {
    const report = await runFleet(
      {
        serviceUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        infraEnvId: 'd0000000-0000-4000-8000-000000000001',
        count: 2,
        mix: 'worker',
        durationSeconds: 3,
        pollIntervalSeconds: 1,
        rampSeconds: 0,
        observe: (a) => seen.push(a),
        onTotals: (r) => (read = r),
      },
      new AbortController().signal,
    );
    expect(report.polls).toBeGreaterThanOrEqual(2);
    expect(report.steps).toEqual({ inventory: report.polls, 'made-up-step': 2 * report.polls });
    expect(read?.().steps).toEqual(report.steps);
    const gets = seen.filter((a) => a.method === 'GET' && a.path.includes('/instructions'));
    // The agents' polls the server answered, each seen once (a poll cut short by the end of the run was not answered).
    expect(gets.length).toBe(report.polls);
    expect(gets.every((a) => a.status === 200 && a.ms >= 4)).toBe(true);
    expect(seen.filter((a) => a.method === 'POST' && a.path.endsWith('/hosts')).map((a) => a.status)).toEqual([201, 201]);
    const posted = seen.filter((a) => a.method === 'POST' && a.path.endsWith('/instructions'));
    expect(posted.length).toBe(served.replies);
    expect(posted.every((a) => a.status === 204)).toBe(true);
  } finally {
    server.close();
  }
});
