/**
 * Downloads to a file with a progress bar (bytes, total, rate from
 * Content-Length), written to `<file>.part` and renamed when complete, so an
 * interrupted download never looks finished. When the output stream is not a
 * terminal the bar becomes a plain line every few seconds.
 */
import { createWriteStream, existsSync, renameSync, statSync } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { SingleBar } from 'cli-progress';
import { unreachable } from './api-client';
import { CliError } from './exit-codes';
import { bytes } from './output';

const PLAIN_EVERY_MS = 2000;

export interface TransferReport {
  file: string;
  bytes: number;
  resumed_from: number;
  seconds: number;
}

/** Streams a response body to `file` (appending after `resumeFrom` bytes of `<file>.part` when the answer is 206); `resumable` when the command can pick up a `.part` again. */
export async function saveResponse(res: Response, file: string, o: { label: string; progress: NodeJS.WriteStream; serviceUrl: string; resumeFrom?: number; resumable?: boolean }): Promise<TransferReport> {
  const partial = res.status === 206 && (o.resumeFrom ?? 0) > 0;
  const start = partial ? o.resumeFrom! : 0;
  const length = Number(res.headers.get('content-length') ?? NaN);
  const total = Number.isFinite(length) ? start + length : undefined;
  const meter = new TransferMeter(o.label, o.progress, total, start);
  const part = `${file}.part`;
  const began = Date.now();
  let got = start;
  const kept = () => (o.resumable ? `${bytes(got)} kept in ${part}, run the command again to resume` : `${part} is incomplete, run the command again`);
  // Ctrl-C: give the terminal its cursor back and say what was kept, then stop like any interrupted command.
  const onSignal = () => {
    meter.stop(false);
    process.stderr.write(`landfall: interrupted; ${kept()}\n`);
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  const counted = async function* (body: AsyncIterable<Uint8Array>) {
    for await (const chunk of body) {
      got += chunk.length;
      meter.update(got);
      yield chunk;
    }
  };
  try {
    if (!res.body) throw new CliError('serviceError', 'the API sent no body');
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>), counted, createWriteStream(part, { flags: partial ? 'a' : 'w' }));
  } catch (err) {
    meter.stop(false);
    if (err instanceof CliError) throw err;
    if ((err as NodeJS.ErrnoException).syscall) throw new CliError('usage', `cannot write ${part}: ${(err as NodeJS.ErrnoException).code}`);
    throw withHint(unreachable(err, o.serviceUrl), `; ${kept()}`);
  } finally {
    process.removeListener('SIGINT', onSignal);
  }
  if (total !== undefined && got !== total) {
    meter.stop(false);
    throw new CliError('unreachable', `download ended after ${got} of ${total} bytes; ${kept()}`);
  }
  meter.stop(true);
  renameSync(part, file);
  return { file, bytes: got, resumed_from: start, seconds: (Date.now() - began) / 1000 };
}

export function partialSize(file: string): number {
  const part = `${file}.part`;
  return existsSync(part) ? statSync(part).size : 0;
}

function withHint(err: CliError, hint: string): CliError {
  return new CliError(err.kind, err.message + hint);
}

/** A cli-progress bar on a terminal, a line every few seconds elsewhere. */
class TransferMeter {
  private bar?: SingleBar;
  private lastLine = 0;
  private readonly began = Date.now();
  private value: number;

  constructor(
    private readonly label: string,
    private readonly out: NodeJS.WriteStream,
    private readonly total: number | undefined,
    private readonly start: number,
  ) {
    this.value = start;
    if (out.isTTY) {
      const format = total !== undefined ? `${label} [{bar}] {percentage}% | {got}/{size} | {rate} | ETA {eta_formatted}` : `${label} {got} | {rate}`;
      this.bar = new SingleBar({ format, stream: out, hideCursor: true, barsize: 30, etaBuffer: 50, fps: 10, clearOnComplete: false, barCompleteChar: '█', barIncompleteChar: '░' });
      this.bar.start(total ?? 1, start, this.payload());
    } else {
      this.line(start > 0 ? `resuming at ${bytes(start)}` : 'started');
    }
  }

  private rate(): string {
    const s = (Date.now() - this.began) / 1000;
    return s > 0 ? `${bytes((this.value - this.start) / s)}/s` : '-';
  }

  private payload() {
    return { got: bytes(this.value), size: bytes(this.total) ?? '?', rate: this.rate() };
  }

  private line(what: string): void {
    const pct = this.total ? ` ${Math.floor((100 * this.value) / this.total)}%` : '';
    this.out.write(`${this.label}: ${what}${pct} ${bytes(this.value)}${this.total !== undefined ? ` of ${bytes(this.total)}` : ''} (${this.rate()})\n`);
    this.lastLine = Date.now();
  }

  update(value: number): void {
    this.value = value;
    if (this.bar) this.bar.update(this.total === undefined ? 0 : value, this.payload());
    else if (Date.now() - this.lastLine >= PLAIN_EVERY_MS) this.line('downloading');
  }

  stop(ok: boolean): void {
    if (this.bar) {
      if (ok && this.total === undefined) this.bar.update(1, this.payload());
      this.bar.stop();
    } else {
      this.line(ok ? 'done' : 'interrupted');
    }
  }
}
