/**
 * Serves a file with some byte ranges replaced (the embed areas of a live ISO),
 * without copying it: the bytes outside the patches are read from the file as
 * they are sent (positional reads on one open handle, pulled by the socket's
 * backpressure, 256 KiB at a time), the patches come from memory. HEAD and one
 * HTTP Range per request are supported; a multi-range request gets the whole
 * file (RFC 9110 lets a server ignore Range).
 */
import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Patch } from './embed-area';

const READ_CHUNK = 256 * 1024;

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
 * The bytes start..end (inclusive) of the file with the patches applied, in
 * order. Memory: one read chunk at a time plus the patches themselves.
 */
export async function* patchedBytes(fh: FileHandle, patches: Patch[], start: number, end: number): AsyncGenerator<Buffer> {
  let pos = start;
  // Positional reads on the caller's handle, one chunk per pull. (fs read streams close the
  // descriptor when destroyed, autoClose or not, and one handle serves every part here.)
  const fromFile = async function* (from: number, to: number) {
    for (let at = from; at <= to; ) {
      const n = Math.min(READ_CHUNK, to - at + 1);
      const buf = Buffer.allocUnsafe(n);
      const { bytesRead } = await fh.read(buf, 0, n, at);
      if (bytesRead === 0) throw new Error(`the base image ended at ${at} while being served (it changed under us)`);
      yield bytesRead === n ? buf : buf.subarray(0, bytesRead);
      at += bytesRead;
    }
  };
  for (const p of patches) {
    const pEnd = p.offset + p.data.length - 1;
    if (pEnd < pos) continue;
    if (p.offset > end) break;
    if (p.offset > pos) {
      yield* fromFile(pos, p.offset - 1);
      pos = p.offset;
    }
    const sliceEnd = Math.min(pEnd, end);
    yield p.data.subarray(pos - p.offset, sliceEnd - p.offset + 1);
    pos = sliceEnd + 1;
  }
  if (pos <= end) yield* fromFile(pos, end);
}

/** A strong validator of the patched content: the file's identity plus a digest of the patches. */
export function patchedEtag(file: { size: number; mtimeMs: number; ino: number }, patches: Patch[]): string {
  const h = createHash('sha256').update(`${file.ino}:${file.size}:${file.mtimeMs}`);
  for (const p of patches) h.update(`${p.offset}:${p.data.length}:`).update(p.data);
  return `"${h.digest('base64url').slice(0, 32)}"`;
}

export interface SendPatchedOptions {
  fh: FileHandle;
  size: number;
  patches: Patch[];
  etag: string;
  contentType: string;
  filename: string;
}

/**
 * Answers GET or HEAD with the patched file: 200 whole, 206 for one satisfiable
 * range (Content-Range), 416 with `Content-Range: bytes * /size` otherwise.
 * Resolves when the response is finished or the client went away.
 */
export async function sendPatchedFile(req: IncomingMessage, res: ServerResponse, o: SendPatchedOptions): Promise<void> {
  const patches = checkPatches(o.patches, o.size);
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
    await pipeline(Readable.from(patchedBytes(o.fh, patches, start, end), { objectMode: false }), res);
  } catch (err) {
    // A client that hangs up mid-download is not an error of ours; anything else is,
    // but the status line is gone by now: cut the connection so the client sees a short body.
    if ((err as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE') {
      res.destroy(err as Error);
      throw err;
    }
  }
}

/**
 * Answers GET or HEAD with one file stored inside the image (an extent: offset
 * and length), with the same Range handling as the whole image. Used for the
 * live rootfs, kernel and initrd that PXE and the minimal ISO fetch.
 */
export async function sendExtent(req: IncomingMessage, res: ServerResponse, o: { fh: FileHandle; offset: number; length: number; etag: string; contentType: string; filename: string }): Promise<void> {
  res.setHeader('Accept-Ranges', 'bytes');
  res.setHeader('ETag', o.etag);
  res.setHeader('Content-Disposition', `attachment; filename="${o.filename}"`);
  const range = parseRange(req.headers.range, o.length);
  if (range.kind === 'unsatisfiable') {
    res.statusCode = 416;
    res.setHeader('Content-Range', `bytes */${o.length}`);
    res.setHeader('Content-Length', '0');
    res.end();
    return;
  }
  const [start, end] = range.kind === 'partial' ? [range.start, range.end] : [0, o.length - 1];
  res.statusCode = range.kind === 'partial' ? 206 : 200;
  res.setHeader('Content-Type', o.contentType);
  res.setHeader('Content-Length', String(end - start + 1));
  if (range.kind === 'partial') res.setHeader('Content-Range', `bytes ${start}-${end}/${o.length}`);
  if (req.method === 'HEAD' || end < start) {
    res.end();
    return;
  }
  try {
    await pipeline(Readable.from(patchedBytes(o.fh, [], o.offset + start, o.offset + end), { objectMode: false }), res);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE') {
      res.destroy(err as Error);
      throw err;
    }
  }
}
