/**
 * The reconcile queue: keys, not events. A key enqueued many times before it
 * runs runs once; a key is never reconciled twice at the same time (one
 * enqueued while it runs runs again after); a failed key comes back after a
 * backoff. Every reconcile reads the current state, so dropping duplicate
 * wake-ups loses nothing.
 */
export class WorkQueue {
  private readonly pending = new Set<string>();
  private readonly running = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private waiters: Array<() => void> = [];
  private stopped = false;

  add(key: string): void {
    if (this.stopped) return;
    if (this.running.has(key)) {
      this.dirty.add(key);
      return;
    }
    this.pending.add(key);
    this.waiters.shift()?.();
  }

  /** Again after a backoff that doubles per consecutive failure of this key (0.5 s … 30 s). */
  retry(key: string): void {
    const n = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, n);
    if (this.timers.has(key)) return;
    const t = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, Math.min(30_000, 500 * 2 ** (n - 1)));
    this.timers.set(key, t);
  }

  /** Back after `ms` (a condition only time changes, e.g. an image URL that expires). */
  addAfter(key: string, ms: number): void {
    if (this.timers.has(key)) return;
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        this.add(key);
      }, ms),
    );
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  get size(): number {
    return this.pending.size + this.running.size;
  }

  /** Runs `handle` on `concurrency` keys at a time until stop(). */
  async run(concurrency: number, handle: (key: string) => Promise<void>): Promise<void> {
    const worker = async () => {
      while (!this.stopped) {
        const key = this.next();
        if (key === undefined) {
          await new Promise<void>((r) => this.waiters.push(r));
          continue;
        }
        this.running.add(key);
        try {
          await handle(key);
        } finally {
          this.running.delete(key);
          if (this.dirty.delete(key)) this.add(key);
        }
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
  }

  private next(): string | undefined {
    for (const k of this.pending) {
      if (this.running.has(k)) continue;
      this.pending.delete(k);
      return k;
    }
    return undefined;
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    for (const w of this.waiters.splice(0)) w();
  }
}
