/**
 * What the agent reports (install progress, step replies) is delivered at
 * least once, in order, however long the service or its database is away.
 * A report the service cannot take now (a 5xx, 429 or no answer) stays in the
 * outbox and is retried with jittered backoff until it is accepted; a 4xx is
 * the service's considered answer and ends that report. With a directory the
 * outbox is also kept on disk, so an agent that restarts sends what it had
 * not delivered before anything new. The service takes repeats idempotently
 * (a step reply by its step id, a progress report of the stage it already has).
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { backoffMs, sleep, type HttpAnswer } from './service-client';

export interface OutboxItem {
  /** Kept for the log and for callers that wait: "progress", "reply". */
  kind: string;
  method: string;
  path: string;
  body: unknown;
}

export type Send = (item: OutboxItem, signal?: AbortSignal) => Promise<HttpAnswer>;

export interface Delivery {
  /** The service's answer; undefined while it was not delivered yet (it stays queued). */
  answer?: HttpAnswer;
}

const retryable = (status: number) => status >= 500 || status === 429 || status === 408;

export class Outbox {
  private readonly queue: OutboxItem[] = [];
  private draining: Promise<void> | undefined;
  private attempt = 0;

  constructor(
    private readonly send: Send,
    private readonly opts: { dir?: string; name?: string; baseMs?: number; capMs?: number; log?: (msg: string, data?: Record<string, unknown>) => void; signal?: AbortSignal } = {},
  ) {
    for (const item of this.load()) this.queue.push(item);
    if (this.queue.length) this.kick();
  }

  get pending(): number {
    return this.queue.length;
  }

  /**
   * Queues the report and tries it at once when nothing is ahead of it. The
   * answer comes back when it was delivered on that first try; otherwise the
   * report waits its turn in the background (the caller goes on).
   */
  async post(item: OutboxItem): Promise<Delivery> {
    if (this.queue.length === 0 && !this.draining) {
      try {
        const answer = await this.send(item, this.opts.signal);
        if (!retryable(answer.status)) return { answer };
      } catch {
        /* no answer: queued below */
      }
    }
    this.queue.push(item);
    this.save();
    this.kick();
    return {};
  }

  /** Resolves once everything queued was delivered or refused (tests; an agent that exits). */
  async flush(): Promise<void> {
    while (this.draining) await this.draining;
  }

  private kick(): void {
    this.draining ??= this.drain().finally(() => (this.draining = undefined));
  }

  private async drain(): Promise<void> {
    while (this.queue.length && !this.opts.signal?.aborted) {
      const item = this.queue[0]!;
      let answer: HttpAnswer | undefined;
      try {
        answer = await this.send(item, this.opts.signal);
      } catch {
        answer = undefined;
      }
      if (answer && !retryable(answer.status)) {
        if (answer.status >= 400) this.opts.log?.('the service refused a queued report', { kind: item.kind, path: item.path, status: answer.status, body: answer.text.slice(0, 300) });
        this.queue.shift();
        this.attempt = 0;
        this.save();
        continue;
      }
      this.attempt++;
      await sleep(backoffMs(Math.min(this.attempt, 8), this.opts.baseMs ?? 1000, this.opts.capMs ?? 60_000), this.opts.signal);
    }
  }

  private file(): string | undefined {
    return this.opts.dir ? path.join(this.opts.dir, `${this.opts.name ?? 'outbox'}.json`) : undefined;
  }

  private load(): OutboxItem[] {
    const f = this.file();
    if (!f) return [];
    try {
      const items = JSON.parse(readFileSync(f, 'utf8')) as unknown;
      return Array.isArray(items) ? (items as OutboxItem[]) : [];
    } catch {
      return [];
    }
  }

  /** Written whole and renamed into place, so a crash mid-write leaves the previous list, never half of one. */
  private save(): void {
    const f = this.file();
    if (!f) return;
    try {
      mkdirSync(path.dirname(f), { recursive: true });
      writeFileSync(`${f}.tmp`, JSON.stringify(this.queue));
      renameSync(`${f}.tmp`, f);
    } catch (err) {
      this.opts.log?.('could not keep the outbox on disk', { error: (err as Error).message });
    }
  }
}
