/**
 * The install steps this agent has started, by step id, and whether each
 * finished, kept on disk when it has a directory. The service sends an install
 * step again when the answer that carried it seems lost (no stage reported in
 * time); a slow or restarted agent that already started it must not run it
 * twice: it runs a step id once. A step that was started and never finished
 * was cut short by the agent itself stopping (killed, crashed): the restarted
 * agent reports that instead of running it again (the disk may be
 * half-written; only a retry of the host, a new step id, installs it).
 *
 * Beside the ledger, an append-only journal (`<name>.log`) has one line per
 * install step actually run: the host's own record of what it executed, read
 * by support and by the chaos test to count executions.
 */
import { appendFileSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

interface Entry {
  id: string;
  finished: boolean;
}

export class StartedSteps {
  private readonly entries: Map<string, Entry>;

  constructor(private readonly file?: string) {
    this.entries = new Map(this.load().map((e) => [e.id, e]));
  }

  static inDir(dir: string | undefined, name: string): StartedSteps {
    return new StartedSteps(dir ? path.join(dir, `${name}.json`) : undefined);
  }

  has(stepId: string): boolean {
    return this.entries.has(stepId);
  }

  /** Records the step as started (on disk before it runs); false when it already was (the caller does not run it again). */
  claim(stepId: string): boolean {
    if (this.entries.has(stepId)) return false;
    this.entries.set(stepId, { id: stepId, finished: false });
    this.save();
    if (this.file) {
      try {
        appendFileSync(this.file.replace(/\.json$/, '.log'), `${new Date().toISOString()} started ${stepId} pid ${process.pid}\n`);
      } catch {
        /* the journal is a record, never a reason not to run */
      }
    }
    return true;
  }

  /** The step ran to its end (success or failure, reported through the outbox). */
  finish(stepId: string): void {
    const e = this.entries.get(stepId);
    if (!e || e.finished) return;
    e.finished = true;
    this.save();
  }

  /** Steps started by an earlier run of this agent that never finished: it stopped while running them. */
  interrupted(): string[] {
    return [...this.entries.values()].filter((e) => !e.finished).map((e) => e.id);
  }

  private load(): Entry[] {
    if (!this.file) return [];
    try {
      const v = JSON.parse(readFileSync(this.file, 'utf8')) as unknown;
      // The first format was a list of ids with no end recorded: taken as finished (nothing to report).
      return Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? { id: x, finished: true } : { id: String((x as Entry).id), finished: Boolean((x as Entry).finished) })) : [];
    } catch {
      return [];
    }
  }

  private save(): void {
    if (!this.file) return;
    try {
      mkdirSync(path.dirname(this.file), { recursive: true });
      // Only the latest few matter (one per install attempt and retry).
      writeFileSync(`${this.file}.tmp`, JSON.stringify([...this.entries.values()].slice(-50)));
      renameSync(`${this.file}.tmp`, this.file);
    } catch {
      /* in memory it still holds for this process */
    }
  }
}
