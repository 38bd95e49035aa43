/**
 * A minimal ustar writer: enough to bundle collected log archives into one
 * download without shelling out to `tar`.
 */
function header(name: string, size: number, mtime: Date): Buffer {
  const h = Buffer.alloc(512, 0);
  const put = (s: string, off: number, len: number) => h.write(s.slice(0, len), off, len, 'ascii');
  const octal = (n: number, len: number) => n.toString(8).padStart(len - 1, '0') + '\0';
  put(name, 0, 100);
  put(octal(0o644, 8), 100, 8);
  put(octal(0, 8), 108, 8);
  put(octal(0, 8), 116, 8);
  put(octal(size, 12), 124, 12);
  put(octal(Math.floor(mtime.getTime() / 1000), 12), 136, 12);
  put('        ', 148, 8); // checksum field counts as spaces while summing
  put('0', 156, 1);
  put('ustar\0', 257, 6);
  put('00', 263, 2);
  let sum = 0;
  for (const b of h) sum += b;
  put(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8);
  return h;
}

export function tar(entries: Array<{ name: string; body: Buffer; mtime?: Date }>): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    if (Buffer.byteLength(e.name) > 100) throw new Error(`tar entry name too long: ${e.name}`);
    parts.push(header(e.name, e.body.length, e.mtime ?? new Date()), e.body);
    const pad = (512 - (e.body.length % 512)) % 512;
    if (pad) parts.push(Buffer.alloc(pad, 0));
  }
  parts.push(Buffer.alloc(1024, 0));
  return Buffer.concat(parts);
}
