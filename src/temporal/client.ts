import { Client, Connection } from '@temporalio/client';

export interface TemporalSettings {
  address: string;
  namespace: string;
}

/**
 * A lazy connection: the API must start, and answer /readyz with 503, while
 * Temporal is still down; gRPC reconnects by itself once it is back.
 */
export function createTemporalClient(s: TemporalSettings): Client {
  const connection = Connection.lazy({ address: s.address });
  return new Client({ connection, namespace: s.namespace });
}

/** Asks the frontend about our namespace, within a deadline. */
export async function pingTemporal(client: Client, namespace: string, timeoutMs: number): Promise<void> {
  await client.connection.withDeadline(Date.now() + timeoutMs, () =>
    client.connection.workflowService.describeNamespace({ namespace }),
  );
}
