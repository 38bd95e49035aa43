/**
 * Summarises a V8 .cpuprofile (what `node --cpu-prof` writes): self time per
 * function and per area (our code, each npm package, Node internals, GC),
 * optionally only for the samples inside a time window.
 *
 *   node dist/bench/cpuprofile-summary.js <file.cpuprofile> [--top N]
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: CpuProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** Milliseconds of samples counted (inside the window). */
  totalMs: number;
  idleMs: number;
  functions: Array<{ name: string; where: string; selfMs: number }>;
  /** Time with the function anywhere on the (synchronous) stack. */
  inclusive: Array<{ name: string; where: string; totalMs: number }>;
  areas: Array<{ area: string; selfMs: number }>;
}

/** Frames that sit under nearly everything and say nothing about where the time goes. */
const PLUMBING = new Set(['(root)', 'processTicksAndRejections', 'runMicrotasks', 'listOnTimeout', 'processTimers', 'emit', 'next', 'handle', '(anonymous)']);

/** Which part of the program a script URL belongs to. */
function areaOf(url: string, functionName: string): string {
  if (!url) {
    if (functionName === '(garbage collector)') return 'GC';
    if (functionName === '(idle)') return 'idle';
    if (functionName === '(program)') return 'V8/native (program)';
    return functionName ? `native: ${functionName}` : 'native';
  }
  if (url.startsWith('node:')) return 'node internals';
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const m = /\/dist\/(src|bench|migrations)\/(.*)$/.exec(url);
  if (m) return `landfall ${m[1]}/${m[2]!.replace(/\.js$/, '')}`;
  return url;
}

function shortWhere(url: string, line: number): string {
  if (!url) return '';
  const nm = url.lastIndexOf('/node_modules/');
  const tail = nm >= 0 ? url.slice(nm + '/node_modules/'.length) : url.includes('/dist/') ? url.slice(url.indexOf('/dist/') + 1) : url.replace(/^file:\/\//, '');
  return `${tail}:${line + 1}`;
}

/**
 * `window` is in the profile's clock (microseconds of CLOCK_MONOTONIC on
 * Linux, the same clock as process.hrtime), so another process can say which
 * part of the run it wants.
 */
export function summarizeCpuProfile(profile: CpuProfile, window?: { fromUs: number; toUs: number }, top = 25): ProfileSummary {
  const byId = new Map<number, CpuProfileNode>();
  for (const n of profile.nodes) byId.set(n.id, n);
  const selfUs = new Map<number, number>();
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    // A sample's cost is the time until the next sample.
    const next = profile.timeDeltas[i + 1] ?? 0;
    if (window && (t < window.fromUs || t > window.toUs)) continue;
    const id = profile.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + next);
  }
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const incl = new Map<string, { name: string; where: string; us: number }>();
  for (const [id, us] of selfUs) {
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const { functionName, url, lineNumber } = byId.get(cur)!.callFrame;
      const name = functionName || '(anonymous)';
      if (PLUMBING.has(name) || !url) continue;
      const where = shortWhere(url, lineNumber);
      const key = `${name}\u0000${where}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const f = incl.get(key) ?? { name, where, us: 0 };
      f.us += us;
      incl.set(key, f);
    }
  }
  const fns = new Map<string, { name: string; where: string; us: number }>();
  const areas = new Map<string, number>();
  let totalUs = 0;
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    totalUs += us;
    if (functionName === '(idle)') {
      idleUs += us;
      continue;
    }
    const name = functionName || '(anonymous)';
    const where = shortWhere(url, lineNumber);
    const key = `${name}\u0000${where}`;
    const f = fns.get(key) ?? { name, where, us: 0 };
    f.us += us;
    fns.set(key, f);
    const area = areaOf(url, functionName);
    areas.set(area, (areas.get(area) ?? 0) + us);
  }
  return {
    totalMs: totalUs / 1000,
    idleMs: idleUs / 1000,
    functions: [...fns.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((f) => ({ name: f.name, where: f.where, selfMs: f.us / 1000 })),
    inclusive: [...incl.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, top)
      .map((f) => ({ name: f.name, where: f.where, totalMs: f.us / 1000 })),
    areas: [...areas.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([area, us]) => ({ area, selfMs: us / 1000 })),
  };
}

export function formatSummary(s: ProfileSummary, topAreas = 15): string {
  const busy = s.totalMs - s.idleMs;
  const pct = (ms: number) => `${((100 * ms) / Math.max(busy, 1e-9)).toFixed(1).padStart(5)}%`;
  const lines = [
    `profiled ${(s.totalMs / 1000).toFixed(1)} s, busy ${(busy / 1000).toFixed(1)} s (${((100 * busy) / Math.max(s.totalMs, 1e-9)).toFixed(0)}% of one core); shares below are of busy time`,
    'self time by area:',
    ...s.areas.slice(0, topAreas).map((a) => `  ${pct(a.selfMs)}  ${a.area}`),
    'top functions by self time:',
    ...s.functions.map((f) => `  ${pct(f.selfMs)}  ${f.name}  ${f.where}`),
    'top functions by inclusive time (synchronous stacks only; an await ends a stack):',
    ...s.inclusive.map((f) => `  ${pct(f.totalMs)}  ${f.name}  ${f.where}`),
  ];
  return lines.join('\n');
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const topIdx = args.indexOf('--top');
  const file = args.find((a, i) => !a.startsWith('--') && !(topIdx >= 0 && i === topIdx + 1));
  if (!file) {
    process.stderr.write(`usage: node ${path.relative(process.cwd(), __filename)} <file.cpuprofile> [--top N]\n`);
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  process.stdout.write(formatSummary(summarizeCpuProfile(profile, undefined, topIdx >= 0 ? Number(args[topIdx + 1]) : 25)) + '\n');
}
