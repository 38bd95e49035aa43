/**
 * The install steps this agent has started, by step id, and whether each
 * finished, kept on disk when it has a directory. The service sends an install
 * step again when the answer that carried it seems lost (no stage reported in
 * time); a slow or restarted agent that already started it must not run it
 * twice: it runs a step id once. A step that was started and never finished
 * was cut short by the agent itself stopping (killed, crashed): the restarted
 * agent reports that instead of running it again (the disk may be
 * half-written; only a retry of the host, a new step id, installs it).
 * Two things more are kept per step: the last stage it reported (what the host
 * was doing when it stopped), and whether it got past the reboot into the
 * installed OS with the step's arguments: past that point the disk is whole
 * and what the step still does is the installed cluster's (a simulated host
 * plays the in-cluster controller), which carries on after a restart instead
 * of being reported as failed.
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
  stage?: string;
  /** The step's arguments, once the host got past its reboot into the installed OS. */
  rebooted?: Record<string, unknown>;
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

  /** The step reported entering a stage (kept so a restart, and whoever reads the ledger, knows where it stopped). */
  stage(stepId: string, stage: string): void {
    const e = this.entries.get(stepId);
    if (!e || e.finished || e.stage === stage) return;
    e.stage = stage;
    this.save();
  }

  /** The host is past its reboot into the installed OS: its disk is whole. */
  rebooted(stepId: string, args: Record<string, unknown>): void {
    const e = this.entries.get(stepId);
    if (!e || e.finished) return;
    e.rebooted = args;
    this.save();
  }

  /** Steps started by an earlier run of this agent that never finished: it stopped while running them. */
  interrupted(): string[] {
    return this.unfinished().map((e) => e.id);
  }

  /** The unfinished steps with where each stopped: the last stage reported, and the arguments kept at the reboot if it got that far. */
  unfinished(): Array<Readonly<Entry>> {
    return [...this.entries.values()].filter((e) => !e.finished);
  }

  private load(): Entry[] {
    if (!this.file) return [];
    try {
      const v = JSON.parse(readFileSync(this.file, 'utf8')) as unknown;
      // The first format was a list of ids with no end recorded: taken as finished (nothing to report).
      return Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? { id: x, finished: true } : readEntry(x as Entry))) : [];
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

function readEntry(x: Entry): Entry {
  const e: Entry = { id: String(x.id), finished: Boolean(x.finished) };
  if (typeof x.stage === 'string') e.stage = x.stage;
  if (x.rebooted && typeof x.rebooted === 'object') e.rebooted = x.rebooted;
  return e;
}
