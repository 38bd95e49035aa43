/**
 * Wakes the event streams of this API process when any process records an
 * event: PostgreSQL sends a notification on the `landfall_events` channel for
 * every insert into `events` (a trigger, migration 20261125101500), and one
 * LISTEN connection per process turns it into a wake-up for every open stream.
 * The streams still read the table by sequence number (the notification
 * carries nothing); the wake-up only replaces waiting out a poll interval, so a
 * lost notification or a dropped connection costs latency, never an event.
 */
import { Client } from 'pg';
import type { Logger } from '../logger';

export class EventWakeups {
  private client: Client | undefined;
  private waiters = new Set<() => void>();
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private notified = 0;

  constructor(
    private readonly databaseUrl: string,
    private readonly logger?: Logger,
  ) {}

  start(): void {
    void this.connect();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new Client({ connectionString: this.databaseUrl });
    client.on('notification', () => this.wakeAll());
    const retry = () => {
      if (this.client === client) this.client = undefined;
      client.end().catch(() => undefined);
      if (!this.closed) this.retryTimer = setTimeout(() => void this.connect(), 2000);
    };
    client.on('error', (err) => {
      this.logger?.warn({ err: err.message }, 'event wake-up connection lost; streams poll until it is back');
      retry();
    });
    try {
      await client.connect();
      await client.query('LISTEN landfall_events');
      this.client = client;
      // Events recorded while not listening are read by the next poll; wake now to read them.
      this.wakeAll();
    } catch (err) {
      this.logger?.warn({ err: (err as Error).message }, 'event wake-up connection failed; streams poll until it is back');
      retry();
    }
  }

  private wakeAll(): void {
    this.notified++;
    const ws = [...this.waiters];
    this.waiters.clear();
    for (const w of ws) w();
  }

  /**
   * Counts wake-ups. A stream reads it before its query and passes it to wait(): an event
   * committed while the query ran (too late for its snapshot) has already sent its
   * notification, and must not leave the stream asleep until the next one or the poll.
   */
  get generation(): number {
    return this.notified;
  }

  /** Resolves at the next event recorded anywhere (at once if one was since `generation`), or after `ms` at the latest. */
  wait(ms: number, generation?: number): Promise<void> {
    if (generation !== undefined && generation !== this.notified) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.waiters.delete(done);
        resolve();
      };
      const t = setTimeout(done, ms);
      this.waiters.add(done);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.wakeAll();
    await this.client?.end().catch(() => undefined);
  }
}
