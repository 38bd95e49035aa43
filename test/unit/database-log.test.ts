/**
 * knex's own messages (a pool that cannot connect, a connection lost) go to
 * the service's structured log when createDb is given a logger, not to
 * console.log, and carry no password from the connection string.
 */
import { createServer, type AddressInfo } from 'node:net';
import pino from 'pino';
import { createDb } from '../../src/db/database';
import { captureLog } from '../support/log-capture';

/** A port that refuses connections: listened on once, then closed. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

describe('createDb with a logger', () => {
  it('logs a failed connection through the logger, as a warning with component db, without the password', async () => {
    const { sink, records: lines } = captureLog();
    const logged = jest.spyOn(console, 'log');
    const db = createDb(`postgres://landfall:sekrit-pw@127.0.0.1:${await closedPort()}/landfall`, 1, 'auto', pino({ level: 'info' }, sink));
    try {
      await expect(db.raw('select 1')).rejects.toThrow(/ECONNREFUSED/);
      const warning = lines.find((l) => l.msg === 'database client warning');
      expect(warning).toMatchObject({ level: 40, component: 'db' });
      expect(String(warning!.knex)).toMatch(/Acquire connection error.*ECONNREFUSED/s);
      expect(JSON.stringify(lines)).not.toContain('sekrit-pw');
      expect(logged).not.toHaveBeenCalled();
    } finally {
      logged.mockRestore();
      await db.destroy();
    }
  });
});
