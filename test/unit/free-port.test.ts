/**
 * freePort (src/dev/process-utils.ts) picks below the kernel's range for
 * outgoing connections, so a client's local port cannot take a port picked
 * for a server before the server binds it; and never the same port twice in
 * a row, nor one that is taken.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { freePort } from '../../src/dev/process-utils';

const ephemeralLow = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

it('picks distinct free ports below the range for outgoing connections, passing over a taken one', async () => {
  const picked: number[] = [];
  for (let i = 0; i < 20; i++) picked.push(await freePort());
  expect(new Set(picked).size).toBe(20);
  for (const p of picked) expect(p).toBeLessThan(ephemeralLow);

  // Taken: the next pick passes over it.
  const next = picked[picked.length - 1]! + 1;
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(next, '127.0.0.1', resolve));
  try {
    const p = await freePort();
    expect(p).not.toBe(next);
    await new Promise<void>((resolve, reject) => {
      const s = net.createServer();
      s.once('error', reject);
      s.listen(p, '127.0.0.1', () => s.close(() => resolve()));
    });
  } finally {
    srv.close();
  }
});
