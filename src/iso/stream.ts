/**
 * Serves a file with some byte ranges replaced (the embed areas of a live ISO),
 * without copying it: the bytes outside the patches are read from the file as
 * they are sent, the patches come from memory. HEAD and one HTTP Range per
 * request are supported; a multi-range request gets the whole file (RFC 9110
 * lets a server ignore Range).
 *
 * Each download owns two read buffers and alternates between them: one is
 * being written to the socket while the next part of the file is read into
 * the other, and a buffer is reused only once the socket has taken its bytes.
 * Memory is constant per download, there is no garbage per chunk, and each
 * download has at most one read waiting in libuv's thread pool, so twenty
 * parallel downloads do not queue a new request's file operations behind
 * hundreds of reads.
 */
import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Patch } from './embed-area';

/** The first read is small so the first bytes leave at once; the rest are large, for throughput. */
const FIRST_CHUNK = 64 * 1024;
const READ_CHUNK = 1024 * 1024;

export type RangeAnswer = { kind: 'full' } | { kind: 'partial'; start: number; end: number } | { kind: 'unsatisfiable' };

/** Interprets a Range header against a representation of `size` bytes (`end` inclusive). */
export function parseRange(header: string | undefined, size: number): RangeAnswer {
  if (!header) return { kind: 'full' };
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  // Not one byte range (another unit, several ranges, nonsense): ignore it.
  if (!m || (m[1] === '' && m[2] === '')) return { kind: 'full' };
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (m[2] !== '' && Number(m[2]) < start) return { kind: 'full' }; // syntactically invalid: ignore
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'partial', start, end };
}

/** Checks that patches are sorted, disjoint and inside a file of `size` bytes. */
export function checkPatches(patches: Patch[], size: number): Patch[] {
  const sorted = [...patches].sort((a, b) => a.offset - b.offset);
  let cursor = 0;
  for (const p of sorted) {
    if (p.offset < cursor) throw new Error(`patch at ${p.offset} overlaps the one before it`);
    cursor = p.offset + p.data.length;
    if (cursor > size) throw new Error(`patch at ${p.offset} runs past the end of the file`);
  }
  return sorted;
}

/**
 * Downloads being started. While any is, the running downloads pause between
 * chunks (each pause at most MAX_PAUSE_MS), so the few event-loop turns a new
 * download needs before its first byte (token check, database, first read) do
 * not each wait behind every running download's bulk transfer. Throughput
 * barely moves; time to first byte under twenty parallel downloads does.
 */
const MAX_PAUSE_MS = 20;
let starting = 0;
let waiters: Array<() => void> = [];

/** Marks a download as starting; call the result once its first byte is on its way (it is idempotent). */
export function downloadStarting(): () => void {
  starting++;
  let done = false;
  return () => {
    if (done) return;
    done = true;
    if (--starting === 0) {
      const w = waiters;
      waiters = [];
      for (const wake of w) wake();
    }
  };
}

function yieldToStarts(): Promise<void> | undefined {
  if (starting === 0) return undefined;
  return new Promise<void>((resolve) => {
    const t = setTimeout(resolve, MAX_PAUSE_MS);
    waiters.push(() => {
      clearTimeout(t);
      resolve();
    });
  });
}

/** One part of the response: bytes of the file (at a file offset) or of a patch. */
type Piece = { file: number; length: number } | { data: Buffer };

/** The pieces that make bytes start..end (inclusive) of the file with the patches applied, in order. */
export function piecesOf(patches: Patch[], start: number, end: number): Piece[] {
  const out: Piece[] = [];
  let pos = start;
  for (const p of patches) {
    const pEnd = p.offset + p.data.length - 1;
    if (pEnd < pos) continue;
    if (p.offset > end) break;
    if (p.offset > pos) {
      out.push({ file: pos, length: p.offset - pos });
      pos = p.offset;
    }
    const sliceEnd = Math.min(pEnd, end);
    out.push({ data: p.data.subarray(pos - p.offset, sliceEnd - p.offset + 1) });
    pos = sliceEnd + 1;
  }
  if (pos <= end) out.push({ file: pos, length: end - pos + 1 });
  return out;
}

class ClientGone extends Error {}

/** Writes the pieces to the response with two alternating read buffers (see the top of this file). */
/**
 * Read buffers are kept for the next download rather than left to the garbage
 * collector (a 1 MiB allocation per download and its collection showed up in
 * profiles); a few are kept, the rest are dropped.
 */
const spare: Buffer[] = [];
const MAX_SPARE = 8;
const takeBuffer = (): Buffer => spare.pop() ?? Buffer.allocUnsafe(READ_CHUNK);
const giveBack = (b: Buffer): void => {
  if (spare.length < MAX_SPARE) spare.push(b);
};

async function writePieces(fh: FileHandle, pieces: Piece[], res: ServerResponse, started: () => void): Promise<void> {
  // Taken when first needed: a small range read uses one buffer, a patch-only range none.
  const buffers: Array<Buffer | undefined> = [undefined, undefined];
  const flushed: Array<Promise<void>> = [Promise.resolve(), Promise.resolve()];
  let turn = 0;
  let first = true;
  let gone: Error | undefined;
  const onClose = () => (gone ??= new ClientGone());
  res.once('close', onClose);
  const write = (chunk: Buffer): Promise<void> =>
    new Promise<void>((resolve) => {
      // The callback runs once the socket has the bytes (or failed); either way the buffer is free again.
      const ok = res.write(chunk, (err) => {
        if (err) gone ??= err;
        resolve();
      });
      void ok;
    });
  try {
    for (const piece of pieces) {
      if ('data' in piece) {
        if (gone) throw gone;
        await Promise.all(flushed);
        const sent = write(piece.data);
        started();
        await sent;
        continue;
      }
      for (let at = piece.file, left = piece.length; left > 0; ) {
        if (gone) throw gone;
        const buf = (buffers[turn] ??= takeBuffer());
        await flushed[turn];
        if (!first) await yieldToStarts();
        const n = Math.min(first ? FIRST_CHUNK : READ_CHUNK, left);
        const { bytesRead } = await fh.read(buf, 0, n, at);
        if (bytesRead === 0) throw new Error(`the base image ended at ${at} while being served (it changed under us)`);
        // Bytes of one buffer leave in order before the other's: node's socket keeps write order.
        flushed[turn] = write(buf.subarray(0, bytesRead));
        if (first) started();
        first = false;
        turn ^= 1;
        at += bytesRead;
        left -= bytesRead;
      }
    }
    await Promise.all(flushed);
    if (gone) throw gone;
    await new Promise<void>((resolve) => res.end(resolve));
  } finally {
    res.off('close', onClose);
    // Reused only once every write has called back: then nothing still points into them.
    // (Not awaited: a write to a destroyed socket may never call back, and then they are just collected.)
    void Promise.all(flushed).then(() => {
      for (const b of buffers) if (b) giveBack(b);
    });
  }
}

/**
 * A strong validator of the patched content: the file's identity plus a
 * digest of the patches. The digest is kept per patch list (hashing a 256 KiB
 * embed area on every request was a tenth of a ranged request's CPU).
 */
const patchDigests = new WeakMap<Patch[], string>();
export function patchedEtag(file: { size: number; mtimeMs: number; ino: number }, patches: Patch[]): string {
  let digest = patchDigests.get(patches);
  if (digest === undefined) {
    const h = createHash('sha256');
    for (const p of patches) h.update(`${p.offset}:${p.data.length}:`).update(p.data);
    digest = h.digest('base64url');
    patchDigests.set(patches, digest);
  }
  return `"${createHash('sha256').update(`${file.ino}:${file.size}:${file.mtimeMs}:${digest}`).digest('base64url').slice(0, 32)}"`;
}

export interface SendPatchedOptions {
  fh: FileHandle;
  /** Where the representation starts in the file (an extent inside an image), 0 for the whole file. */
  offset?: number;
  size: number;
  patches: Patch[];
  etag: string;
  contentType: string;
  filename: string;
  /** From downloadStarting(): called once the first byte is on its way, or the answer is complete. */
  started?: () => void;
}

/**
 * Answers GET or HEAD with the patched file (or an extent of it): 200 whole,
 * 206 for one satisfiable range (Content-Range), 416 with
 * `Content-Range: bytes * /size` otherwise. Resolves when the response is
 * finished or the client went away.
 */
export async function sendPatchedFile(req: IncomingMessage, res: ServerResponse, o: SendPatchedOptions): Promise<void> {
  const started = o.started ?? (() => undefined);
  try {
    await answer(req, res, o, started);
  } finally {
    started();
  }
}

async function answer(req: IncomingMessage, res: ServerResponse, o: SendPatchedOptions, started: () => void): Promise<void> {
  const base = o.offset ?? 0;
  const patches = checkPatches(o.patches, base + o.size);
  res.setHeader('Accept-Ranges', 'bytes');
  res.setHeader('ETag', o.etag);
  res.setHeader('Cache-Control', 'private, no-store');
  res.setHeader('Content-Disposition', `attachment; filename="${o.filename}"`);
  const ifRange = req.headers['if-range'];
  const range = ifRange !== undefined && ifRange !== o.etag ? ({ kind: 'full' } as const) : parseRange(req.headers.range, o.size);
  if (range.kind === 'unsatisfiable') {
    res.statusCode = 416;
    res.setHeader('Content-Range', `bytes */${o.size}`);
    res.setHeader('Content-Length', '0');
    res.end();
    return;
  }
  const [start, end] = range.kind === 'partial' ? [range.start, range.end] : [0, o.size - 1];
  res.statusCode = range.kind === 'partial' ? 206 : 200;
  res.setHeader('Content-Type', o.contentType);
  res.setHeader('Content-Length', String(end - start + 1));
  if (range.kind === 'partial') res.setHeader('Content-Range', `bytes ${start}-${end}/${o.size}`);
  if (req.method === 'HEAD' || end < start) {
    res.end();
    return;
  }
  try {
    await writePieces(o.fh, piecesOf(patches, base + start, base + end), res, started);
  } catch (err) {
    // A client that hangs up mid-download is not an error of ours; anything else is,
    // but the status line is gone by now: cut the connection so the client sees a short body.
    if (err instanceof ClientGone || (err as NodeJS.ErrnoException).code === 'ECONNRESET' || (err as NodeJS.ErrnoException).code === 'EPIPE') return;
    res.destroy(err as Error);
    throw err;
  }
}

/**
 * One file stored inside the image (an extent: offset and length), with the
 * same Range handling as the whole image. Used for the live rootfs, kernel and
 * initrd that PXE and the minimal ISO fetch.
 */
export function sendExtent(req: IncomingMessage, res: ServerResponse, o: { fh: FileHandle; offset: number; length: number; etag: string; contentType: string; filename: string; started?: () => void }): Promise<void> {
  return sendPatchedFile(req, res, { fh: o.fh, offset: o.offset, size: o.length, patches: [], etag: o.etag, contentType: o.contentType, filename: o.filename, started: o.started });
}
