/**
 * Which failures mean "a dependency is away right now" (PostgreSQL restarting,
 * Temporal unreachable, object storage refusing connections) rather than a bug.
 * Those are answered 503 with Retry-After, never 500: agents and clients retry
 * a 503 by contract (the agent's outbox keeps the report), and an operator's
 * 5xx alert on 500 keeps meaning "Landfall is broken", not "PostgreSQL is
 * restarting". Recognised by what the drivers raise, walking the cause chain
 * (the Temporal client and knex wrap the socket error).
 */

/** SQLSTATEs of a server that is going away, starting up or unreachable (class 08, 57P0x, 53300). */
const PG_UNAVAILABLE = /^(08...|57P0[1-4]|53300)$/;
/** Socket errors: refused, reset, timed out, unreachable. */
const SOCKET = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT']);
/** gRPC status codes the Temporal client reports for a server it cannot reach: UNAVAILABLE, DEADLINE_EXCEEDED. */
const GRPC_UNAVAILABLE = new Set([14, 4]);
/** Messages the pg driver and knex give without a code ("timeout expired": pg's connect timeout, a server restarting or swamped). */
const MESSAGES = [/Connection terminated/i, /^timeout expired$/, /Timeout acquiring a connection/i, /Client has encountered a connection error/i, /terminating connection due to/i, /the database system is (starting up|shutting down|in recovery mode)/i, /Failed to connect before the deadline/i, /No connection established/i];

/** The dependency, when the error names it; 'a dependency' for a bare socket error. */
export type Dependency = 'postgresql' | 'temporal' | 'a dependency';

/** The dependency that is away, when `err` says one is; undefined for every other error. */
export function unavailableDependency(err: unknown): Dependency | undefined {
  let temporal = false;
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const x = e as { name?: string; code?: unknown; message?: string; routine?: unknown; severity?: unknown };
    if (x.name === 'ServiceError' || x.name === 'TransportError' || x.name === 'WorkflowUpdateRPCTimeoutOrCancelledError') temporal = true;
    if (typeof x.code === 'number' && GRPC_UNAVAILABLE.has(x.code)) return 'temporal';
    if (typeof x.code === 'string' && PG_UNAVAILABLE.test(x.code) && x.severity !== undefined) return 'postgresql';
    if (x.name === 'KnexTimeoutError') return 'postgresql';
    if (typeof x.code === 'string' && SOCKET.has(x.code)) return temporal ? 'temporal' : 'a dependency';
    // A Unix socket whose server is gone: the file went with it, so connect() says ENOENT, not ECONNREFUSED.
    if (x.code === 'ENOENT' && (x as { syscall?: unknown }).syscall === 'connect') return temporal ? 'temporal' : 'a dependency';
    if (typeof x.message === 'string' && MESSAGES.some((m) => m.test(x.message!))) return temporal || /deadline|No connection established/i.test(x.message) ? 'temporal' : 'postgresql';
  }
  return temporal ? 'temporal' : undefined;
}
