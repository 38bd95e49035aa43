/**
 * A log destination for tests that assert on what was logged (a pino logger
 * built on `sink`): every JSON line written to it, parsed, and the raw text.
 */
import { Writable } from 'node:stream';

export interface LogCapture<T = Record<string, unknown>> {
  sink: Writable;
  /** The records written so far, one per complete line. */
  records: T[];
  /** Everything written so far, as written. */
  text(): string;
  /** Forgets what was written (a test that looks only at what comes next). */
  clear(): void;
}

export function captureLog<T = Record<string, unknown>>(): LogCapture<T> {
  const records: T[] = [];
  let text = '';
  // A line may arrive in pieces (an asynchronous destination): only complete lines are parsed.
  let partial = '';
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      const s = chunk.toString('utf8');
      text += s;
      const lines = (partial + s).split('\n');
      partial = lines.pop()!;
      for (const l of lines) if (l) records.push(JSON.parse(l) as T);
      cb();
    },
  });
  return {
    sink,
    records,
    text: () => text,
    clear: () => {
      records.length = 0;
      text = '';
      partial = '';
    },
  };
}
