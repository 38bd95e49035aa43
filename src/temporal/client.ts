import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';

export interface TemporalSettings {
  address: string;
  namespace: string;
}

/**
 * gRPC's retry interceptor in @temporalio/client sleeps between attempts on
 * a bare timer and, once the channel is closed, that timer throws from
 * nowhere ("Channel has been shut down": an uncaught exception that ends
 * whatever process hosts the API). So every retry is known here: once
 * closing, no new retry is decided, and the channel closes only after the
 * last retry already scheduled has fired.
 */
const retryState = new WeakMap<Connection, { closing: boolean; lastRetryAt: number }>();

/**
 * A lazy connection: the API must start, and answer /readyz with 503, while
 * Temporal is still down; gRPC reconnects by itself once it is back.
 */
export function createTemporalClient(s: TemporalSettings): Client {
  const state = { closing: false, lastRetryAt: 0 };
  const base = defaultGrpcRetryOptions();
  const connection = Connection.lazy({
    address: s.address,
    interceptors: [
      makeGrpcRetryInterceptor({
        retryableDecider: (attempt, status) => !state.closing && base.retryableDecider(attempt, status),
        delayFunction: (attempt, status) => {
          const ms = base.delayFunction(attempt, status);
          state.lastRetryAt = Math.max(state.lastRetryAt, Date.now() + ms);
          return ms;
        },
      }),
    ],
  });
  retryState.set(connection, state);
  return new Client({ connection, namespace: s.namespace });
}

/** Closes a client made by createTemporalClient once no retry of it is still waiting to fire. */
export async function closeTemporalClient(client: Client): Promise<void> {
  const state = retryState.get(client.connection as Connection);
  if (state) {
    state.closing = true;
    const wait = state.lastRetryAt - Date.now();
    // The retry timer fires, its call fails at once (not retried any more), then the channel may go.
    if (wait > 0) await new Promise((r) => setTimeout(r, wait + 50));
  }
  await client.connection.close();
}

/** Asks the frontend about our namespace, within a deadline. */
export async function pingTemporal(client: Client, namespace: string, timeoutMs: number): Promise<void> {
  await withCallDeadline(client, Date.now() + timeoutMs, () => client.connection.workflowService.describeNamespace({ namespace }));
}

const deadlineCalls = new WeakMap<object, number>();

/**
 * `client.withDeadline`, which leaves no async hook behind. The connection
 * passes the deadline to its calls in an AsyncLocalStorage, and on Node 20
 * the first `run()` installs a promise hook that stays for the life of the
 * process: every promise of every request then pays for it (a promise-heavy
 * loop ran 2.2× slower with one enabled; the API's profile showed the hook's
 * frames on every poll once a /readyz had pinged Temporal). The calls read
 * the deadline when they start, so once none is in flight the storage is
 * switched off, and the next call switches it on again.
 */
export async function withCallDeadline<T>(client: Pick<Client, 'withDeadline'> & { connection?: unknown }, deadline: number, fn: () => Promise<T>): Promise<T> {
  const conn = client.connection as { callContextStorage?: { disable(): void } } | undefined;
  const storage = conn?.callContextStorage;
  if (!conn || !storage) return client.withDeadline(deadline, fn);
  deadlineCalls.set(conn, (deadlineCalls.get(conn) ?? 0) + 1);
  try {
    return await client.withDeadline(deadline, fn);
  } finally {
    const left = deadlineCalls.get(conn)! - 1;
    deadlineCalls.set(conn, left);
    if (left === 0) storage.disable();
  }
}
