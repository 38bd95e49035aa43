/**
 * The install steps this agent has started, by step id, kept on disk when it
 * has a directory. The service sends an install step again when the answer
 * that carried it seems lost (no stage reported in time); a slow or restarted
 * agent that already started it must not run it twice: it runs a step id once.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export class StartedSteps {
  private readonly ids: Set<string>;

  constructor(private readonly file?: string) {
    this.ids = new Set(this.load());
  }

  static inDir(dir: string | undefined, name: string): StartedSteps {
    return new StartedSteps(dir ? path.join(dir, `${name}.json`) : undefined);
  }

  has(stepId: string): boolean {
    return this.ids.has(stepId);
  }

  /** Records the step as started; false when it already was (the caller does not run it again). */
  claim(stepId: string): boolean {
    if (this.ids.has(stepId)) return false;
    this.ids.add(stepId);
    this.save();
    return true;
  }

  private load(): string[] {
    if (!this.file) return [];
    try {
      const v = JSON.parse(readFileSync(this.file, 'utf8')) as unknown;
      return Array.isArray(v) ? v.map(String) : [];
    } catch {
      return [];
    }
  }

  private save(): void {
    if (!this.file) return;
    try {
      mkdirSync(path.dirname(this.file), { recursive: true });
      // Only the latest few matter (one per install attempt and retry).
      writeFileSync(`${this.file}.tmp`, JSON.stringify([...this.ids].slice(-50)));
      renameSync(`${this.file}.tmp`, this.file);
    } catch {
      /* in memory it still holds for this process */
    }
  }
}
