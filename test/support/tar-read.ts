/** Reads a tar.gz (or plain tar) into its entries, for tests that check what an archive holds. */
import { gunzipSync } from 'node:zlib';
import { extract } from 'tar-stream';

export async function readTarGz(data: Buffer): Promise<Map<string, Buffer>> {
  const raw = data[0] === 0x1f && data[1] === 0x8b ? gunzipSync(data) : data;
  const out = new Map<string, Buffer>();
  const ex = extract();
  const done = new Promise<void>((resolve, reject) => {
    ex.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: unknown) => chunks.push(c as Buffer));
      stream.on('end', () => {
        out.set(header.name, Buffer.concat(chunks));
        next();
      });
      stream.on('error', reject);
    });
    ex.on('finish', resolve);
    ex.on('error', reject);
  });
  ex.end(raw);
  await done;
  return out;
}
