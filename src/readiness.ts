/**
 * /readyz answers "can this process do its job right now": every dependency is
 * asked in parallel, each within its own deadline, and a failure names which.
 */
export interface DependencyCheck {
  name: string;
  check: () => Promise<void>;
}

export interface DependencyStatus {
  ok: boolean;
  latency_ms: number;
  error?: string;
}

export interface ReadinessReport {
  ready: boolean;
  failing: string[];
  checks: Record<string, DependencyStatus>;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Keeps error text short and free of connection strings. */
function describeError(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return (msg.split('\n')[0] ?? 'error').replace(/\b\w+:\/\/[^\s]*/g, '[url]').slice(0, 200) || 'error';
}

export async function checkReadiness(checks: DependencyCheck[], timeoutMs: number): Promise<ReadinessReport> {
  const results = await Promise.all(
    checks.map(async (c): Promise<[string, DependencyStatus]> => {
      const started = Date.now();
      try {
        await withTimeout(c.check(), timeoutMs);
        return [c.name, { ok: true, latency_ms: Date.now() - started }];
      } catch (err) {
        return [c.name, { ok: false, latency_ms: Date.now() - started, error: describeError(err) }];
      }
    }),
  );
  const checksOut = Object.fromEntries(results);
  const failing = results.filter(([, s]) => !s.ok).map(([n]) => n);
  return { ready: failing.length === 0, failing, checks: checksOut };
}
