/**
 * withCallDeadline: a Temporal call with a deadline still ends at its
 * deadline, and afterwards the connection's AsyncLocalStorage is off again
 * (on Node 20 an enabled one keeps a promise hook on every promise of the
 * process: the API's polls paid for a /readyz ping long after it ended).
 * The address is a closed local port: the call can only end by its deadline.
 */
import { executionAsyncResource } from 'node:async_hooks';
import { createTemporalClient, closeTemporalClient, withCallDeadline } from '../../src/temporal/client';

type Storage = { enabled?: boolean; getStore(): unknown };
const storageOf = (c: ReturnType<typeof createTemporalClient>) => (c.connection as unknown as { callContextStorage: Storage }).callContextStorage;

describe('withCallDeadline', () => {
  const client = createTemporalClient({ address: '127.0.0.1:1', namespace: 'default' });
  afterAll(() => closeTemporalClient(client));

  it('ends the call at its deadline and leaves the storage off', async () => {
    const started = Date.now();
    await expect(withCallDeadline(client, Date.now() + 300, () => client.connection.workflowService.describeNamespace({ namespace: 'default' }))).rejects.toThrow();
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(250);
    expect(took).toBeLessThan(10_000);
    // Node 20's AsyncLocalStorage keeps `enabled` while its hook is installed.
    expect(storageOf(client).enabled).toBe(false);
    expect(storageOf(client).getStore()).toBeUndefined();
    expect(executionAsyncResource()).toBeDefined();
  });

  it('keeps the storage on while another call with a deadline is still in flight', async () => {
    let seenInside: unknown;
    const long = withCallDeadline(client, Date.now() + 800, async () => {
      await new Promise((r) => setTimeout(r, 400));
      // The short call below has ended by now: this call's context must still be there.
      seenInside = storageOf(client).getStore();
      return client.connection.workflowService.describeNamespace({ namespace: 'default' });
    });
    await expect(withCallDeadline(client, Date.now() + 100, () => client.connection.workflowService.describeNamespace({ namespace: 'default' }))).rejects.toThrow();
    expect(storageOf(client).enabled).toBe(true);
    await expect(long).rejects.toThrow();
    expect(seenInside).toMatchObject({ deadline: expect.anything() });
    expect(storageOf(client).enabled).toBe(false);
  });
});
