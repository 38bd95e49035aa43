/**
 * The collection pauses each process exports (src/metrics.ts,
 * landfall_process_gc_pause_seconds) and how bench/agent-api reads a window
 * of them (bench/agent-stack.ts gcBetween): by role, each kind's rate, the
 * share of the window paused, the pauses of 50 ms or more and the longest.
 */
import { Histogram, Registry } from 'prom-client';
import { createMetrics } from '../../src/metrics';
import { gcBetween, type RefreshReading } from '../../bench/agent-stack';
import { parseHistograms } from '../../bench/fleet-gauges';
import type { Db } from '../../src/db/database';

const NO_DB = {} as Db;

it("counts this process's own collections, by kind, in every registry that shows them", async () => {
  const a = createMetrics(NO_DB).registry;
  const b = createMetrics(NO_DB).registry;
  const count = async (r: Registry) => parseHistograms(await r.getSingleMetricAsString('landfall_process_gc_pause_seconds'), 'landfall_process_gc_pause_seconds', ['role', 'kind'])['main/minor']?.count ?? 0;
  const before = await count(a);
  // Short-lived garbage well past the young generation's size: several minor collections.
  let keep = 0;
  for (let i = 0; i < 2_000_000; i++) keep += [i, { i }].length;
  expect(keep).toBe(4_000_000);
  // Entries reach the observer after the current task.
  await new Promise((r) => setTimeout(r, 50));
  const after = await count(a);
  expect(after).toBeGreaterThan(before);
  // One histogram per process: a second registry shows the same pauses, not a second count of them.
  expect(await count(b)).toBe(after);
});

it('reads a window of pauses by role: rates by kind, share paused, long pauses and the longest bound', async () => {
  const registry = new Registry();
  const h = new Histogram({ name: 'landfall_process_gc_pause_seconds', help: 'x', labelNames: ['role', 'kind'], buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1], registers: [registry] });
  const reading = async (): Promise<RefreshReading> => ({ ages: {}, transactions: {}, gc: parseHistograms(await registry.metrics(), 'landfall_process_gc_pause_seconds', ['role', 'kind']) });
  h.observe({ role: 'refresh', kind: 'minor' }, 0.3); // before the window: not counted
  const before = await reading();
  for (let i = 0; i < 20; i++) h.observe({ role: 'refresh', kind: 'minor' }, 0.004);
  h.observe({ role: 'refresh', kind: 'minor' }, 0.07);
  h.observe({ role: 'refresh', kind: 'incremental' }, 0.2);
  h.observe({ role: 'serve', kind: 'minor' }, 0.002);
  const w = gcBetween(before, await reading(), 10);
  expect(w.refresh).toEqual({ perSecond: { minor: 2.1, incremental: 0.1 }, pausedShare: expect.closeTo((20 * 0.004 + 0.07 + 0.2) / 10, 9), longCount: 2, longestAtMostMs: 250 });
  expect(w.serve).toEqual({ perSecond: { minor: 0.1 }, pausedShare: expect.closeTo(0.0002, 9), longCount: 0, longestAtMostMs: 5 });
  // A role with nothing in the window is left out.
  expect(gcBetween(await reading(), await reading(), 10)).toEqual({});
});
