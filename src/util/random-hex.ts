/**
 * Eight random hex digits (a step id's suffix, as assisted-service makes
 * them), drawn from a buffer filled 4 KiB at a time. A `randomBytes(4)` per
 * step handed out was 1.4 % of the API's time in a 5,000-host fleet's
 * profile (24 µs a call: a buffer and a trip into OpenSSL each). Same
 * source, same quality: only the draws are batched.
 */
import { randomFillSync } from 'node:crypto';

const pool = Buffer.alloc(4096);
let at = pool.length;

export function randomHex8(): string {
  if (at + 4 > pool.length) {
    randomFillSync(pool);
    at = 0;
  }
  const s = pool.toString('hex', at, at + 4);
  at += 4;
  return s;
}
