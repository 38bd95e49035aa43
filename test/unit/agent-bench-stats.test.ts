import { cpuShare, findKnee, growth, nextBisectRate, parseRates, percentiles, rateMeets, scrapeEffect, secondsLine, type RateOutcome } from '../../bench/agent-stats';
import { changedInventoryReply } from '../../bench/agent-load';
import { inventoryFor } from '../../bench/inventory';

const ok = (offered: number, p99 = 10): RateOutcome => ({ offered, achieved: offered, p99, failures: 0 });

describe('agent bench arithmetic', () => {
  it('percentiles are nearest-rank: a value some request had', () => {
    const xs = Array.from({ length: 100 }, (_, i) => 100 - i); // 100..1, unsorted
    expect(percentiles(xs)).toEqual({ count: 100, p50: 50, p90: 90, p99: 99, max: 100 });
    expect(percentiles([7])).toEqual({ count: 1, p50: 7, p90: 7, p99: 7, max: 7 });
    // 10 samples: p99 is the largest (rank ceil(9.9) = 10), p50 the fifth.
    expect(percentiles([1, 2, 3, 4, 5, 6, 7, 8, 9, 1000]).p99).toBe(1000);
    expect(percentiles([1, 2, 3, 4, 5, 6, 7, 8, 9, 1000]).p50).toBe(5);
    expect(Number.isNaN(percentiles([]).p99)).toBe(true);
  });

  it('a rate meets the target only with p99 under the bound, no failures and the rate answered', () => {
    const c = { p99Ms: 50 };
    expect(rateMeets(ok(1000, 49.9), c)).toBe(true);
    expect(rateMeets(ok(1000, 50), c)).toBe(false);
    expect(rateMeets({ ...ok(1000), failures: 1 }, c)).toBe(false);
    expect(rateMeets({ ...ok(1000), achieved: 970 }, c)).toBe(false);
    expect(rateMeets({ ...ok(1000), achieved: 985 }, c)).toBe(true);
    expect(rateMeets({ ...ok(1000), p99: NaN }, c)).toBe(false);
  });

  it('the knee is the highest passing rate below the first miss, whatever the order', () => {
    const c = { p99Ms: 50 };
    const sweep = [ok(2000, 80), ok(500), ok(1500, 30), ok(1000), ok(2500, 40)];
    expect(findKnee(sweep, c)).toEqual({ knee: 1500, firstMiss: 2000, metAboveMiss: [2500] });
    expect(findKnee([ok(500), ok(1000)], c)).toEqual({ knee: 1000, firstMiss: undefined, metAboveMiss: [] });
    expect(findKnee([ok(500, 60), ok(1000)], c)).toEqual({ knee: undefined, firstMiss: 500, metAboveMiss: [1000] });
    expect(findKnee([], c)).toEqual({ knee: undefined, firstMiss: undefined, metAboveMiss: [] });
  });

  it('bisection halves the bracket between the knee and the first miss until it is within the resolution', () => {
    const c = { p99Ms: 50 };
    const sweep = [ok(1500), ok(2000, 90)];
    expect(nextBisectRate(sweep, c, 50)).toBe(1750);
    sweep.push(ok(1750, 70));
    expect(nextBisectRate(sweep, c, 50)).toBe(1650);
    sweep.push(ok(1650));
    expect(nextBisectRate(sweep, c, 50)).toBe(1700);
    sweep.push(ok(1700));
    expect(nextBisectRate(sweep, c, 50)).toBeUndefined(); // 1700..1750: within 50
    expect(nextBisectRate([ok(500), ok(1000)], c, 50)).toBeUndefined(); // no miss: nothing to bisect
    expect(nextBisectRate([ok(500, 99)], c, 50)).toBeUndefined(); // no knee
  });

  it('each second\'s p99 on one line, the seconds at the bound counted and empty seconds named', () => {
    expect(secondsLine([12.4, 60, null, 50, NaN, 1234.5])).toBe('12 60 n/a 50 n/a 1,235 ms (3 of 6 seconds ≥ 50 ms)');
    expect(secondsLine([49.9, 10])).toBe('50 10 ms (0 of 2 seconds ≥ 50 ms)');
  });

  it('parses a rate list, sorted and without repeats, and refuses nonsense', () => {
    expect(parseRates('1700, 500,1000,500')).toEqual([500, 1000, 1700]);
    expect(() => parseRates('')).toThrow(/--rates/);
    expect(() => parseRates('500,abc')).toThrow(/--rates/);
    expect(() => parseRates('-5')).toThrow(/--rates/);
  });

  it('CPU shares: cores per party over the window; other is what the machine used beyond them', () => {
    const a = { wall: 100, api: 10, postgres: 5, generator: 1, bench: 0.5, machineBusy: 1000, machineTotal: 4000 };
    const b = { wall: 110, api: 19, postgres: 10, generator: 3, bench: 1, machineBusy: 1018, machineTotal: 4020 };
    const s = cpuShare(a, b);
    expect(s.api).toBeCloseTo(0.9);
    expect(s.postgres).toBeCloseTo(0.5);
    expect(s.generator).toBeCloseTo(0.2);
    expect(s.bench).toBeCloseTo(0.05);
    expect(s.machineBusy).toBeCloseTo(1.8);
    expect(s.other).toBeCloseTo(0.15);
    expect(s.machineCores).toBeCloseTo(2);
    expect(growth(200, 220)).toBeCloseTo(0.1);
  });

  it("each inventory reply to a host changes its memory size from the one before, and nothing else about the host", () => {
    const base = JSON.parse(inventoryFor('worker-000007', 7)) as Record<string, unknown>;
    const outputs = [1, 2, 3].map((n) => JSON.parse((JSON.parse(changedInventoryReply(7, n)) as { output: string }).output) as { memory: { physical_bytes: number }; hostname: string });
    const sizes = outputs.map((o) => o.memory.physical_bytes);
    expect(new Set([...sizes, (base.memory as { physical_bytes: number }).physical_bytes]).size).toBe(4);
    for (const o of outputs) expect({ ...o, memory: base.memory }).toEqual(base);
  });
});

describe('what a window’s scrapes cost the polls', () => {
  it('sets the seconds a scrape started in against the others, by the median of their p99s', () => {
    const secondsP99 = [100, 10, 12, 90, 11, 13, 80, NaN];
    const e = scrapeEffect(
      [
        { second: 0, ms: 40 },
        { second: 3, ms: 30 },
        { second: 6, ms: 50 },
        // One that started after the window ended, and one that failed (NaN): neither is a second of the window or a wall time.
        { second: 9, ms: 20 },
        { second: 3, ms: NaN },
      ],
      secondsP99,
    );
    expect(e.count).toBe(5);
    expect(e.seconds).toEqual([0, 3, 6]);
    expect(e.withScrape).toBe(90);
    // The others: 10, 11, 12, 13 (the unanswered second has no p99).
    expect(e.without).toBe(11);
    expect(e.wallMs.count).toBe(4);
    expect(e.wallMs.max).toBe(50);
  });
});
