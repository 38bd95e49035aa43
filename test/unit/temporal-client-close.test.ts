/**
 * Closing the API's Temporal client while a call waits to retry: the
 * library's retry timer throws "Channel has been shut down" from nowhere once
 * the channel is gone, which kills the process hosting the API (seen as a
 * test suite dying after the one that stopped its API with Temporal away).
 * Run in a child process, as the API is, from the compiled code.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const CLIENT = path.resolve(__dirname, '../../dist/src/temporal/client.js');
const script = (close: 'plain' | 'ours') => `
const { createTemporalClient, closeTemporalClient } = require(${JSON.stringify(CLIENT)});
(async () => {
  const c = createTemporalClient({ address: '127.0.0.1:1', namespace: 'default' });
  const call = c.connection.workflowService.describeNamespace({ namespace: 'default' }).then(() => 'answered', () => 'failed');
  await new Promise((r) => setTimeout(r, 400)); // refused, and a retry is waiting
  await (${JSON.stringify(close)} === 'plain' ? c.connection.close() : closeTemporalClient(c));
  console.log('call ' + (await call));
  await new Promise((r) => setTimeout(r, 3000)); // longer than the retry waits of these first attempts
  console.log('survived');
})();`;

describe('closing the Temporal client', () => {
  it('with a retry waiting, a plain close kills the process (why closeTemporalClient exists)', () => {
    const r = spawnSync(process.execPath, ['-e', script('plain')], { encoding: 'utf8', timeout: 30000 });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/Channel has been shut down/);
  });

  it('closeTemporalClient lets the waiting retry fail its call, then closes: the process lives on', () => {
    const r = spawnSync(process.execPath, ['-e', script('ours')], { encoding: 'utf8', timeout: 30000 });
    expect([r.status, r.stdout.trim().split('\n')]).toEqual([0, ['call failed', 'survived']]);
  });
});
