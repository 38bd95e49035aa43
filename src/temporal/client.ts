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
  await client.connection.withDeadline(Date.now() + timeoutMs, () =>
    client.connection.workflowService.describeNamespace({ namespace }),
  );
}
