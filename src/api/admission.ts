/**
 * Admission of the agents' high-volume requests (poll, step reply,
 * registration): past what a process can serve promptly, it turns them away
 * at once with 503 and Retry-After instead of queueing them.
 *
 * Why: on 2026-11-27 a 20,000-host fleet on this 2-core box queued its
 * requests for tens of seconds (for a database connection, then 503 after
 * 10 s anyway), every agent retried, polls came back minutes late, and the
 * hosts went disconnected by the thousand (bench/README.md). A request
 * refused at the door costs a fraction of one served, and the ones let in are
 * served at once. Agents retry a 503 by contract; the upstream agent's
 * replies and Landfall's outbox keep what they could not deliver.
 *
 * Three gauges of this process, read per request: agent requests in flight,
 * how long the oldest poll in flight has waited (once several are in
 * flight), and how late the process itself is (a timer's lateness). A poll
 * is one statement, so an old one among others means a standing queue (for
 * the CPU or the database), not a burst: a rack of 256 hosts registering
 * together is let in. Polls are refused last (replies and registrations at
 * half the in-flight limit), since a poll is the host's sign of life. That a
 * poll was refused, or that the process was late, is recorded in the
 * database (service_pressure), at most every RECORD_EVERY_MS per process, so
 * the disconnect rule does not count that silence against the host
 * (src/domain/lifecycle/silence.ts). Operators' requests are never
 * refused here: they are few, and they are how one looks at an overloaded
 * service.
 *
 * The refusal depends on this process's load, which is the one thing here
 * kept in memory that changes an answer: it is what admission is.
 *
 * Every admitted agent request's own time in the process is observed in
 * `landfall_agent_request_duration_seconds{operation}`: the service's share of
 * an agent's latency, which a load generator (or an agent) cannot separate
 * from its own.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Db } from '../db/database';
import { recordShedding } from '../db/service-pressure-repo';
import type { Logger } from '../logger';
import { BASE_PATH } from './assisted/presenters';
import { errorBody } from './errors';
import { requestId } from './request-context';

export interface AdmissionSettings {
  /** Agent requests this process serves at once; 0: no limit. */
  maxInFlight: number;
  /** The oldest poll in flight has waited this long (ms): refuse new agent requests until it is answered; 0: no limit. */
  maxPollWaitMs: number;
  /** The process itself is this late (ms: a timer fired this much after it was due): refuse polls meanwhile; 0: no limit. */
  maxLoopLagMs?: number;
  /** Retry-After is drawn from this range (seconds), so refused agents do not come back together. */
  retryAfterSeconds: [number, number];
}

export interface AdmissionDeps {
  logger: Logger;
  db: Db;
  settings: AdmissionSettings;
  metricsRegistry?: Registry;
  now?: () => number;
  random?: () => number;
}

/** The Retry-After range of a refusal; silence.ts's SHED_GRACE_MS covers its top. */
export const ADMISSION_RETRY_AFTER_S: [number, number] = [5, 20];
export const SHED_METRIC = 'landfall_agent_requests_shed_total';
export const AGENT_DURATION_METRIC = 'landfall_agent_request_duration_seconds';
/** Seconds; 0.05 is the agent API's latency target (a poll answered within 50 ms), so the share under it is exact. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const RECORD_EVERY_MS = 2000;
/** Polls in flight before the oldest one's wait is read as a queue. */
const MIN_POLL_QUEUE = 8;
const WARN_EVERY_MS = 60_000;

type Operation = 'poll' | 'reply' | 'register';
type Gauge = 'in_flight' | 'poll_wait' | 'loop_lag';
/** How often the process checks its own lateness. */
const LAG_TICK_MS = 500;
const AGENT_PREFIX = `${BASE_PATH}/v2/infra-envs/`;
const INSTRUCTIONS = /^[^/?]+\/hosts\/[^/?]+\/instructions(?:\?|$)/;
const REGISTER = /^[^/?]+\/hosts(?:\?|$)/;

/** Which admitted operation a request is, by method and path only (no parsing; an odd spelling is not one). */
export function agentOperation(method: string | undefined, url: string | undefined): Operation | undefined {
  if (!url?.startsWith(AGENT_PREFIX)) return undefined;
  const rest = url.slice(AGENT_PREFIX.length);
  if (method === 'GET') return INSTRUCTIONS.test(rest) ? 'poll' : undefined;
  if (method === 'POST') return INSTRUCTIONS.test(rest) ? 'reply' : REGISTER.test(rest) ? 'register' : undefined;
  return undefined;
}

/** Polls in flight in arrival order, answered ones dropped from the head as it is read: the oldest waiting poll's start. */
class PollQueue {
  private entries: Array<{ at: number; done: boolean }> = [];
  private head = 0;
  /** Polls in flight. */
  size = 0;
  add(at: number): () => void {
    const e = { at, done: false };
    this.entries.push(e);
    this.size++;
    return () => {
      e.done = true;
      this.size--;
    };
  }
  oldest(): number | undefined {
    while (this.head < this.entries.length && this.entries[this.head]!.done) this.head++;
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
    return this.entries[this.head]?.at;
  }
}

export function agentAdmission(deps: AdmissionDeps, next: RequestListener): RequestListener {
  const { maxInFlight, maxPollWaitMs, maxLoopLagMs = 0, retryAfterSeconds } = deps.settings;
  const now = deps.now ?? Date.now;
  const random = deps.random ?? Math.random;
  const shed = new Counter({
    name: SHED_METRIC,
    help: 'Agent requests this API process turned away with 503 + Retry-After because it was at capacity (too many in flight, a poll waiting too long, or the process itself late)',
    labelNames: ['operation', 'gauge'],
    registers: deps.metricsRegistry ? [deps.metricsRegistry] : [],
  });
  // The service's own time for an agent request it took, from its headers read to its answer written: what a load
  // generator's latency cannot separate from its own lag. Time spent in the socket before the process read the
  // request is not in it (the loop-lag gauge covers that); refused requests are counted by `shed`, not here.
  const duration = new Histogram({
    name: AGENT_DURATION_METRIC,
    help: "Seconds this API process took to answer an agent's poll, step reply or registration it admitted, from its headers read to its answer written",
    labelNames: ['operation'],
    buckets: DURATION_BUCKETS,
    registers: deps.metricsRegistry ? [deps.metricsRegistry] : [],
  });
  let inFlight = 0;
  let recordedAt = -Infinity;
  let warnedAt = -Infinity;
  const polls = new PollQueue();
  // One slow poll is not a queue (a lock, a slow disk): the wait counts once a few polls are in flight.
  const pollWaitMs = (t: number) => {
    const oldest = polls.size >= MIN_POLL_QUEUE ? polls.oldest() : undefined;
    return oldest === undefined ? 0 : t - oldest;
  };

  /** The service is late for its agents: stored (at most every RECORD_EVERY_MS) for the disconnect rule. */
  const notePressure = (t: number) => {
    if (t - recordedAt < RECORD_EVERY_MS) return;
    recordedAt = t;
    recordShedding(deps.db, t).catch((err: Error) => deps.logger.debug({ err: err.message }, 'could not record the shedding'));
  };

  // The process's own lateness, which no request gauge sees: a process starved of CPU (by its machine's other
  // processes, by a long GC) reads its sockets late, and a poll that waited there is invisible to `polls`. A
  // timer that fires late says so; polls answered late meanwhile are the service's silence, not their hosts'.
  let loopLagMs = 0;
  if (maxLoopLagMs) {
    let due = Date.now() + LAG_TICK_MS;
    setInterval(() => {
      const t = Date.now();
      loopLagMs = Math.max(0, t - due);
      due = t + LAG_TICK_MS;
      if (loopLagMs >= maxLoopLagMs) notePressure(now());
    }, LAG_TICK_MS).unref();
  }

  /** Which limit the request is over, if any: polls at the full in-flight limit, the rest at half. */
  const over = (op: Operation, t: number): Gauge | undefined => {
    if (maxInFlight && inFlight >= maxInFlight * (op === 'poll' ? 1 : 0.5)) return 'in_flight';
    if (maxPollWaitMs && pollWaitMs(t) >= maxPollWaitMs) return 'poll_wait';
    if (maxLoopLagMs && loopLagMs >= maxLoopLagMs) return 'loop_lag';
    return undefined;
  };

  const refuse = (req: IncomingMessage, res: ServerResponse, op: Operation, gauge: Gauge, t: number) => {
    shed.inc({ operation: op, gauge });
    if (op === 'poll') notePressure(t);
    if (t - warnedAt >= WARN_EVERY_MS) {
      warnedAt = t;
      deps.logger.warn({ inFlight, oldestPollWaitMs: pollWaitMs(t), loopLagMs, limits: { maxInFlight, maxPollWaitMs, maxLoopLagMs }, operation: op, gauge }, 'at capacity: turning agent requests away with 503 + Retry-After');
    }
    const [lo, hi] = retryAfterSeconds;
    const wait = lo + Math.floor(random() * (hi - lo + 1));
    requestId(req, res);
    const body = JSON.stringify(errorBody(503, `the service is at capacity; try again in ${wait} s`));
    res.writeHead(503, { 'Retry-After': String(wait), 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
    // The request's body is not read: drain it so the connection stays usable for the agent's next request.
    req.resume();
    res.end(body);
  };

  return (req, res) => {
    const op = agentOperation(req.method, req.url);
    if (!op) return next(req, res);
    const t = now();
    const gauge = over(op, t);
    if (gauge) return refuse(req, res, op, gauge, t);
    inFlight++;
    const pollDone = op === 'poll' ? polls.add(t) : undefined;
    const started = performance.now();
    res.once('close', () => {
      inFlight--;
      pollDone?.();
      duration.observe({ operation: op }, (performance.now() - started) / 1000);
    });
    next(req, res);
  };
}
