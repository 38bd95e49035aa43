/**
 * The poll lane when it cannot connect (src/db/poll-lane.ts): the caller gets
 * undefined (and uses the pool), and the lane does not try again for a while,
 * so a database that is away costs each poll no extra connection attempt.
 */
import { createServer, type AddressInfo, type Server } from 'node:net';
import pino from 'pino';
import { PollLane } from '../../src/db/poll-lane';
import { captureLog } from '../support/log-capture';

let server: Server;
let attempts = 0;

beforeAll(async () => {
  // Accepts and hangs up at once: every connection attempt fails, and is counted.
  server = createServer((s) => {
    attempts++;
    s.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('a poll lane that cannot connect', () => {
  it('answers undefined, leaves the server alone until its retry time, and says so once', async () => {
    const { sink, records: lines } = captureLog<{ msg: string; level: number }>();
    const lane = new PollLane(`postgres://u:lane-secret-pw@127.0.0.1:${(server.address() as AddressInfo).port}/db`, 'auto', pino({ level: 'info' }, sink));
    try {
      expect(await lane.query('s1', 'select 1', [])).toBeUndefined();
      expect(attempts).toBe(1);
      // Many polls at once, right after: none waits on a connection, none tries one.
      const now = await Promise.all(Array.from({ length: 20 }, () => lane.query('s1', 'select 1', [])));
      expect(now.every((r) => r === undefined)).toBe(true);
      expect(attempts).toBe(1);
      await new Promise((r) => setTimeout(r, 1100));
      expect(await lane.query('s1', 'select 1', [])).toBeUndefined();
      expect(attempts).toBe(2);
      // Two failed attempts, one warning: a database that stays away is not logged once a second.
      expect(lines.filter((l) => l.msg.startsWith('poll lane cannot connect'))).toHaveLength(1);
      expect(lines.every((l) => !JSON.stringify(l).includes('lane-secret-pw'))).toBe(true);
    } finally {
      await lane.close();
    }
  });

  it('answers undefined once closed, without connecting', async () => {
    const lane = new PollLane(`postgres://u:lane-secret-pw@127.0.0.1:${(server.address() as AddressInfo).port}/db`, 'auto');
    const before = attempts;
    await lane.close();
    expect(await lane.query('s1', 'select 1', [])).toBeUndefined();
    expect(attempts).toBe(before);
  });
});
