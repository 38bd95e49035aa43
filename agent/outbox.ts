/**
 * What the agent reports (install progress, step replies, logs archives and
 * their progress) is delivered at least once, in order, however long the
 * service or its database is away.
 * A report the service cannot take now (a 5xx, 429 or no answer) stays in the
 * outbox and is retried with jittered backoff until it is accepted; a 4xx is
 * the service's considered answer and ends that report. With a directory the
 * outbox is also kept on disk, so an agent that restarts sends what it had
 * not delivered before anything new. The service takes repeats idempotently
 * (a step reply by its step id, a progress report of the stage it already has,
 * a host's logs archive replacing the one it has). A file (a logs archive) is
 * kept beside the outbox's list rather than in it, so the list stays small.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { backoffMs, sleep, type HttpAnswer } from './service-client';

export interface OutboxItem {
  /** Kept for the log and for callers that wait: "progress", "reply", "logs". */
  kind: string;
  method: string;
  path: string;
  body: unknown;
  /**
   * Sent as a multipart file instead of a JSON body (a logs archive). `bytes`
   * is there when the item is handed to `send`; on disk the bytes are in the
   * file `stored` names, beside the outbox's list.
   */
  file?: { name: string; bytes?: Buffer; stored?: string };
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
    this.queue.push(this.keepFile(item));
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
      const ready = this.withBytes(item);
      if (!ready) {
        this.opts.log?.('a queued file is gone from the outbox; dropping its report', { kind: item.kind, path: item.path, file: item.file?.stored });
        this.done();
        continue;
      }
      let answer: HttpAnswer | undefined;
      try {
        answer = await this.send(ready, this.opts.signal);
      } catch {
        answer = undefined;
      }
      if (answer && !retryable(answer.status)) {
        if (answer.status >= 400) this.opts.log?.('the service refused a queued report', { kind: item.kind, path: item.path, status: answer.status, body: answer.text.slice(0, 300) });
        this.done();
        continue;
      }
      this.attempt++;
      await sleep(backoffMs(Math.min(this.attempt, 8), this.opts.baseMs ?? 1000, this.opts.capMs ?? 60_000), this.opts.signal);
    }
  }

  /** The head of the queue was delivered or refused: off the list, and its file off the disk. */
  private done(): void {
    const item = this.queue.shift();
    if (item?.file?.stored) rmSync(item.file.stored, { force: true });
    this.attempt = 0;
    this.save();
  }

  /** A file to keep: written beside the list when the outbox has a directory (its bytes stay in memory too, until delivered). */
  private keepFile(item: OutboxItem): OutboxItem {
    const dir = this.opts.dir;
    if (!item.file?.bytes || !dir) return item;
    const stored = path.join(dir, `${this.opts.name ?? 'outbox'}-file-${randomUUID()}`);
    try {
      mkdirSync(dir, { recursive: true });
      writeFileSync(stored, item.file.bytes);
      return { ...item, file: { ...item.file, stored } };
    } catch (err) {
      this.opts.log?.('could not keep a file on disk; it stays in memory only', { error: (err as Error).message });
      return item;
    }
  }

  /** The item as `send` gets it: with its file's bytes, read back from disk after a restart; undefined when they are gone. */
  private withBytes(item: OutboxItem): OutboxItem | undefined {
    if (!item.file || item.file.bytes) return item;
    try {
      return { ...item, file: { ...item.file, bytes: readFileSync(item.file.stored ?? '') } };
    } catch {
      return undefined;
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
      // A file's bytes are in their own file (keepFile), not in the list.
      const list = this.queue.map((i) => (i.file ? { ...i, file: { name: i.file.name, stored: i.file.stored } } : i));
      writeFileSync(`${f}.tmp`, JSON.stringify(list));
      renameSync(`${f}.tmp`, f);
    } catch (err) {
      this.opts.log?.('could not keep the outbox on disk', { error: (err as Error).message });
    }
  }
}
