/**
 * The bench's open loop against a local server: requests go out on their
 * schedule, the figures split into windows by due time, and the generator's
 * own lateness (a request sent after its scheduled start) is reported and
 * counted in the latencies, which run from the scheduled start.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { openLoop, type MixRequest } from '../../bench/agent-load';

describe('bench open loop', () => {
  let server: http.Server;
  let port = 0;
  let received = 0;
  /** Called with each request's number as the server receives it (the generator runs in this same process). */
  let onRequest: (n: number) => void = () => undefined;
  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      onRequest(++received);
      res.end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('windows by due time, and the generator held up shows as lateness in its window', async () => {
    const mix = { next: (): MixRequest => ({ kind: 'GET', method: 'GET', path: '/x', headers: {} }) };
    // The generator's event loop held for 300 ms inside the second of three 0.5 s windows: by the 60th
    // request (due at 600 ms), not by a timer, which a loaded machine could fire late into the third window.
    const first = received;
    onRequest = (n) => {
      if (n - first !== 60) return;
      const until = performance.now() + 300;
      while (performance.now() < until) {
        /* busy: nothing goes out meanwhile */
      }
    };
    const r = await openLoop(port, mix, { type: 'open', id: 1, rate: 100, seconds: 1.5, maxSockets: 8, windowSeconds: 0.5 }).finally(() => (onRequest = () => undefined));
    expect(r.windows).toHaveLength(3);
    expect(r.windows.map((w) => w.scheduled).reduce((a, b) => a + b, 0)).toBe(r.scheduled);
    expect(r.completed).toBe(r.scheduled);
    expect(r.errors).toBe(0);
    const held = r.windows[1]!;
    // Requests due during the hold went out when it ended: up to ~300 ms late, and their latency says so.
    expect(held.lateMaxMs).toBeGreaterThanOrEqual(200);
    expect(held.all.max).toBeGreaterThanOrEqual(held.lateMaxMs);
    expect(r.lateMaxMs).toBe(Math.max(...r.windows.map((w) => w.lateMaxMs)));
    // Each second's p99 by due time: the hold (600–900 ms) is in the first second, whose p99 shows it.
    expect(r.secondsP99).toHaveLength(2);
    expect(r.secondsP99[0]).toBeGreaterThanOrEqual(200);
  });

  it('a lead runs the same load before the window, unmeasured, and marks where the window starts', async () => {
    const mix = { next: (): MixRequest => ({ kind: 'GET', method: 'GET', path: '/x', headers: {} }) };
    const before = received;
    const marks: Array<{ at: number; received: number }> = [];
    const t = performance.now();
    const r = await openLoop(port, mix, { type: 'open', id: 2, rate: 100, seconds: 1, maxSockets: 8, leadSeconds: 0.5 }, () => marks.push({ at: performance.now() - t, received: received - before }));
    // Marked once, when the window's first request was due: half a second in, with the lead's requests sent.
    expect(marks).toHaveLength(1);
    expect(marks[0]!.at).toBeGreaterThanOrEqual(490);
    // (Most of the lead's 50 were answered by then; not all need be on a loaded machine.)
    expect(marks[0]!.received).toBeGreaterThanOrEqual(25);
    expect(marks[0]!.received).toBeLessThanOrEqual(50);
    // The figures are the window's alone (its 100 requests, its one second); the server answered both.
    expect(r.scheduled).toBe(100);
    expect(r.completed).toBe(100);
    expect(r.secondsP99).toHaveLength(1);
    expect(r.leadSecondsP99).toHaveLength(1);
    expect(r.leadSecondsP99[0]).toBeGreaterThan(0);
    expect(received - before).toBe(150);
  });
});
