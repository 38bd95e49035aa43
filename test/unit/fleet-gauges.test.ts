/**
 * What bench/fleet-real.ts relies on to tell the service's latency from its
 * own generator's (bench/fleet-gauges.ts): a request that waited for a pooled
 * socket is split into that wait and its time on the wire; a blocked event loop
 * shows in the generator's loop delay; and the steps per poll a repeat interval
 * implies count the service's early-poll slack.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { ServiceClient } from '../../agent/service-client';
import { GeneratorGauges, RequestTimes, expectedPerPoll, summarize } from '../../bench/fleet-gauges';

it('splits a request that waited for the one pooled socket into that wait and its time on the wire', async () => {
  const server = http.createServer((_req, res) => setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'), 150));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const times = new RequestTimes('/api/assisted-install/v2');
  times.recording = true;
  const dispatcher = new Agent({ connections: 1, pipelining: 1 });
  const cfg = { serviceUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, infraEnvId: 'e', agentToken: '', agentVersion: 'v' };
  const client = new ServiceClient(cfg, dispatcher, 0, times.observe);
  try {
    // Two polls at once over one socket: the second is written only when the first is answered.
    await Promise.all(['a', 'b'].map((h) => client.request('GET', `/infra-envs/e/hosts/${h}/instructions?timestamp=1`)));
    const poll = times.samples.poll;
    expect(poll.total).toHaveLength(2);
    const [first, second] = [0, 1].sort((i, j) => poll.toWrite[i]! - poll.toWrite[j]!);
    // The second was written only once the first was answered: it waited about the server's 150 ms longer.
    expect(poll.toWrite[second!]! - poll.toWrite[first!]!).toBeGreaterThanOrEqual(120);
    // On the wire each took at least the server's 150 ms; a request's wait and time on the wire fit in its whole
    // time; and the second's time on the wire leaves out the ~150 ms it waited for the socket. (Relations, not a
    // wall-clock ceiling: under a loaded CI machine the server's own timer fired 300 ms late, and a ceiling of
    // 400 ms on the wire time failed while the split was right.)
    for (const [i, w] of poll.wire.entries()) {
      expect(w).toBeGreaterThanOrEqual(140);
      expect(poll.toWrite[i]! + w).toBeLessThanOrEqual(poll.total[i]! + 1);
    }
    expect(poll.wire[second!]).toBeLessThan(poll.total[second!]! - 100);
    expect(poll.total[second!]).toBeGreaterThanOrEqual(270);
    expect(summarize(poll).wire.count).toBe(2);
    // Nothing is kept while the window is closed.
    times.recording = false;
    await client.request('GET', '/infra-envs/e/hosts/c/instructions?timestamp=1');
    expect(poll.total).toHaveLength(2);
  } finally {
    times.close();
    await dispatcher.close();
    await new Promise((r) => server.close(r));
  }
});

it("shows a blocked event loop in the generator's loop delay", async () => {
  const g = new GeneratorGauges();
  g.start();
  await new Promise((r) => setTimeout(r, 100));
  const until = Date.now() + 250;
  while (Date.now() < until) {
    /* the generator busy: every timestamp taken meanwhile is late */
  }
  await new Promise((r) => setTimeout(r, 100));
  const reading = g.stop();
  expect(reading.loopDelayMs.max).toBeGreaterThanOrEqual(200);
  expect(reading.cpuCores).toBeGreaterThan(0.3);
  expect(reading.seconds).toBeGreaterThan(0.4);
});

it('expects a step on every ceil((interval - slack) / poll period)-th poll', () => {
  // 2-minute step, a poll measured at 59.99 s: every second poll, as the service (5 s early-poll slack) hands it out.
  expect(expectedPerPoll(120_000, 59.99, 5000)).toBe(1 / 2);
  expect(expectedPerPoll(300_000, 60.2, 5000)).toBe(1 / 5);
  // Without the slack a poll a hair early would wait one more round.
  expect(expectedPerPoll(120_000, 59.99, 0)).toBe(1 / 3);
  // The slack is at most a tenth of the interval; a step shorter than the poll goes out on every poll.
  expect(expectedPerPoll(10_000, 5, 5000)).toBe(1 / 2);
  expect(expectedPerPoll(30_000, 60, 5000)).toBe(1);
});
