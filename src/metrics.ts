/**
 * Prometheus metrics for GET /metrics. Install outcomes and fleet state are
 * read from PostgreSQL at scrape time, so every API process reports the same
 * truth however many api and worker processes there are; durations observed
 * in the request path (stage durations, registration → known) are histograms
 * of this process.
 */
import { PerformanceObserver, constants as perf } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Db } from './db/database';
import { eventTallies, INSTALL_OUTCOMES, type TallyRow } from './db/event-tallies-repo';

/**
 * The series each process keeps for itself (its resources, durations it
 * observed): with several API processes these are summed across them, as a
 * PromQL sum() over the scraped replicas would. Every other series is read
 * from PostgreSQL and is the same from any process.
 */
export const PROCESS_LOCAL_METRICS: readonly string[] = [
  'landfall_process_resident_memory_bytes',
  'landfall_process_heap_used_bytes',
  'landfall_process_cpu_seconds_total',
  'landfall_process_gc_pause_seconds',
  'landfall_host_install_stage_duration_seconds',
  'landfall_host_registration_to_known_seconds',
  // src/api/agent-fast-path.ts (FAST_PATH_METRIC)
  'landfall_agent_fast_path_requests_total',
  'landfall_api_requests_total',
  // src/api/admission.ts (SHED_METRIC, AGENT_DURATION_METRIC)
  'landfall_agent_requests_shed_total',
  'landfall_agent_request_duration_seconds',
  'landfall_refresh_request_age_seconds',
  'landfall_refresh_transaction_duration_seconds',
];

/**
 * Who ran a refresh (src/services/refresh-queue.ts): the refresher draining
 * the queue, a person's read settling what it reads, or an agent's request
 * that wanted its host refreshed before its answer.
 */
export type RefreshPath = 'refresher' | 'read' | 'agent';

export interface MetricsPort {
  stageDuration(stage: string, role: string, seconds: number): void;
  registrationToKnown(seconds: number): void;
  /**
   * A refresh transaction committed: for each target it refreshed, how long
   * since that target's first pending request (what a reader of its
   * validations waited for at most), and how long the transaction took.
   */
  refreshed(path: RefreshPath, requestAgesSeconds: number[], transactionSeconds: number): void;
}

/** A collection's kind as Node reports it (perf_hooks gc entries' detail.kind), as the metric labels it. */
const GC_KINDS: Record<number, string> = {
  [perf.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [perf.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [perf.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [perf.NODE_PERFORMANCE_GC_WEAKCB]: 'weak_callbacks',
};

let gcPauses: Histogram<'role' | 'kind'> | undefined;

/**
 * This process's collection pauses (the main thread stopped for V8's
 * collector), by kind. One histogram and one observer per process, however
 * many registries show it (tests make many). Why it is exported: the
 * refresher's collections stall every refresh in flight, and a window whose
 * report → validations tail went long is told from one where the CPU was
 * short only by seeing them (bench/agent-api prints them by process role).
 */
function gcPauseHistogram(role: string): Histogram<'role' | 'kind'> {
  if (gcPauses) return gcPauses;
  const h = new Histogram({
    name: 'landfall_process_gc_pause_seconds',
    help: "Pauses of this process's main thread for garbage collection, by process role and collection kind",
    labelNames: ['role', 'kind'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [],
  });
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = GC_KINDS[(e as unknown as { detail?: { kind?: number } }).detail?.kind ?? -1] ?? 'other';
      h.observe({ role, kind }, e.duration / 1000);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  gcPauses = h;
  return h;
}

export function createMetrics(db: Db): { registry: Registry; port: MetricsPort; countRequest: () => void } {
  const registry = new Registry();
  // prom-client's default Node metrics include gauges named *_total, which promtool rejects; export the two that matter.
  new Gauge({
    name: 'landfall_process_resident_memory_bytes',
    help: 'Resident memory of this process',
    registers: [registry],
    collect() {
      this.set(process.memoryUsage().rss);
    },
  });
  // RSS alone does not tell a leak (the heap grows) from the allocator keeping freed pages; bench/soak reads both.
  // By role (an API process that serves requests, the API's refresher, or a process of its own: main), so that with
  // several processes the sum over each role says which kind holds the memory.
  const role = process.env.API_PROCESS_ROLE ?? 'main';
  new Gauge({
    name: 'landfall_process_heap_used_bytes',
    help: 'V8 heap in use by this process, by process role (serve, refresh, main)',
    labelNames: ['role'],
    registers: [registry],
    collect() {
      this.set({ role }, process.memoryUsage().heapUsed);
    },
  });
  registry.registerMetric(gcPauseHistogram(role));
  new Counter({
    name: 'landfall_process_cpu_seconds_total',
    help: 'CPU time (user + system) used by this process',
    registers: [registry],
    collect() {
      const u = process.cpuUsage();
      this.reset();
      this.inc((u.user + u.system) / 1e6);
    },
  });

  const stage = new Histogram({
    name: 'landfall_host_install_stage_duration_seconds',
    help: 'How long hosts spent in each install stage (observed when the next stage is reported)',
    labelNames: ['stage', 'role'],
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200],
    registers: [registry],
  });
  const toKnown = new Histogram({
    name: 'landfall_host_registration_to_known_seconds',
    help: 'Time from a host registering to it first becoming known (all validations passing)',
    buckets: [5, 15, 30, 60, 120, 300, 600, 1800, 3600],
    registers: [registry],
  });

  // Why validations lag behind agents' facts, when they do: how long requests waited before their refresh committed
  // (the service's own report → validations stored), and how long refreshes take; both by who refreshed (RefreshPath).
  const byPath = (name: string, help: string, buckets: number[]) => new Histogram({ name, help, labelNames: ['path'], buckets, registers: [registry] });
  const requestAge = byPath(
    'landfall_refresh_request_age_seconds',
    "Per refreshed target: time from its first pending refresh request (an agent's new facts) to the commit of its refresh, by who refreshed it",
    // Fine around the 200 ms target: the p99 of thousands of refreshes a minute, read as a bucket bound, says by how much
    // a window missed or met it (with 200 then 500 ms as neighbours, every miss read "≤ 500 ms").
    [0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1, 2, 5, 10, 30, 60],
  );
  const refreshTransaction = byPath(
    'landfall_refresh_transaction_duration_seconds',
    'Duration of refresh transactions (claim to commit; a refresher transaction may hold several clusters), by who ran them',
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  );

  const grouped = async (sql: string) => (await db.raw(sql)).rows as Array<Record<string, string>>;
  // The queue as it stands, from PostgreSQL (the same from every process): a refresher that stopped or fell behind
  // shows here before any reader notices stale validations.
  new Gauge({
    name: 'landfall_refresh_pending_targets',
    help: 'Clusters (and unbound hosts) with new facts waiting for their refresh',
    registers: [registry],
    async collect() {
      const [r] = await grouped('select count(distinct target)::int as n from refresh_requests');
      this.set(Number(r?.n ?? 0));
    },
  });
  new Gauge({
    name: 'landfall_refresh_oldest_request_age_seconds',
    help: 'Age of the oldest pending refresh request (0 when none is pending)',
    registers: [registry],
    async collect() {
      const [r] = await grouped("select coalesce(date_part('epoch', clock_timestamp() - min(requested_at)), 0) as s from refresh_requests");
      this.set(Math.max(0, Number(r?.s ?? 0)));
    },
  });
  new Gauge({
    name: 'landfall_hosts',
    help: 'Hosts by status',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of await grouped('select status, count(*)::int as n from hosts group by status')) this.set({ status: r.status! }, Number(r.n));
    },
  });
  new Gauge({
    name: 'landfall_clusters',
    help: 'Clusters by status and release',
    labelNames: ['status', 'release'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of await grouped('select status, openshift_version as release, count(*)::int as n from clusters group by 1, 2')) this.set({ status: r.status!, release: r.release! }, Number(r.n));
    },
  });
  // Both counters come from one reading of the running totals per scrape (event-tallies-repo.ts), shared while it runs.
  let tallying: Promise<TallyRow[]> | undefined;
  const tallies = () => (tallying ??= eventTallies(db).finally(() => (tallying = undefined)));
  new Counter({
    name: 'landfall_installs_total',
    help: 'Installs started, succeeded and failed, by release, and for failures the stage the failing host was in',
    labelNames: ['outcome', 'release', 'failing_stage'],
    registers: [registry],
    async collect() {
      const rows = (await tallies()).filter((r) => r.tally === 'installs');
      this.reset();
      for (const { labels: [name, release, stage], n } of rows) this.inc({ outcome: INSTALL_OUTCOMES[name]!, release, failing_stage: stage }, n);
    },
  });
  new Gauge({
    name: 'landfall_installed_clusters_first_attempt_ratio',
    help: 'Share of installed clusters that installed at their first attempt',
    registers: [registry],
    async collect() {
      // A cluster Landfall installed and then opened for new hosts (adding-hosts) is still installed; an imported one (attempt 0) never was.
      const [r] = await grouped("select count(*) filter (where install_attempt = 1)::float as first, count(*)::float as total from clusters where status = 'installed' or (status = 'adding-hosts' and install_attempt > 0)");
      this.set(Number(r?.total) ? Number(r!.first) / Number(r!.total) : 0);
    },
  });
  new Counter({
    name: 'landfall_host_validation_failures_total',
    help: 'Times a host validation started failing, by validation id',
    labelNames: ['validation_id'],
    registers: [registry],
    async collect() {
      const rows = (await tallies()).filter((r) => r.tally === 'host_validation_failures');
      this.reset();
      for (const { labels: [id], n } of rows) this.inc({ validation_id: id }, n);
    },
  });

  // By process (its pid): with API_PROCESSES > 1, /metrics shows how the port's connections are spread over the workers.
  const requests = new Counter({
    name: 'landfall_api_requests_total',
    help: 'HTTP requests this API process received, by process id',
    labelNames: ['process'],
    registers: [registry],
  }).labels({ process: String(process.pid) });

  return {
    registry,
    countRequest: () => requests.inc(),
    port: {
      stageDuration: (s, role, seconds) => stage.observe({ stage: s, role }, seconds),
      registrationToKnown: (seconds) => toKnown.observe(seconds),
      refreshed: (path, ages, seconds) => {
        for (const a of ages) requestAge.observe({ path }, Math.max(0, a));
        refreshTransaction.observe({ path }, seconds);
      },
    },
  };
}
