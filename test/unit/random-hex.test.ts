/** Step id suffixes drawn from the batched pool: eight hex digits, and no repeats across many refills. */
import { randomHex8 } from '../../src/util/random-hex';

it('draws eight hex digits, distinct across refills of the pool', () => {
  const seen = new Set<string>();
  // 20,000 draws of 4 bytes: about 20 refills of the 4 KiB pool.
  for (let i = 0; i < 20_000; i++) {
    const h = randomHex8();
    expect(h).toMatch(/^[0-9a-f]{8}$/);
    seen.add(h);
  }
  // 32 random bits: a collision among 20,000 has a chance of about 5 %; more than two would mean a repeated pool.
  expect(seen.size).toBeGreaterThanOrEqual(19_998);
});
