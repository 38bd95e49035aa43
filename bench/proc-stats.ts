/**
 * Linux /proc readings for the agent-API benchmarks: the CPU seconds and resident memory of a
 * whole process tree (an API primary and its node:cluster workers; the PostgreSQL postmaster
 * and its backends), and the machine's busy time. Nothing here changes anything.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

export const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

interface Stat {
  ppid: number;
  /** utime + stime of the process (all its threads), seconds. */
  self: number;
  /** cutime + cstime: its children that exited and were reaped, seconds. */
  reaped: number;
}

function stat(pid: number): Stat | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses; the fields start after the last ')'.
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // f[0] is field 3 (state): ppid is field 4, utime 14, stime 15, cutime 16, cstime 17.
    const n = (field: number) => Number(f[field - 3]);
    return { ppid: n(4), self: (n(14) + n(15)) / CLK_TCK, reaped: (n(16) + n(17)) / CLK_TCK };
  } catch {
    return undefined;
  }
}

/** Every live process in the tree under `root` (root included), with its /proc stat. */
function tree(root: number): Map<number, Stat> {
  const out = new Map<number, Stat>();
  const top = stat(root);
  if (!top) return out;
  out.set(root, top);
  const children = new Map<number, number[]>();
  const stats = new Map<number, Stat>();
  for (const entry of readdirSync('/proc')) {
    if (entry.charCodeAt(0) > 57) continue;
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === root) continue;
    const s = stat(pid);
    if (!s) continue;
    stats.set(pid, s);
    const list = children.get(s.ppid);
    if (list) list.push(pid);
    else children.set(s.ppid, [pid]);
  }
  const queue = [root];
  while (queue.length) {
    for (const child of children.get(queue.pop()!) ?? []) {
      out.set(child, stats.get(child)!);
      queue.push(child);
    }
  }
  return out;
}

/**
 * CPU seconds used by a process tree so far: each live member's own time plus the time of its
 * children already reaped (a worker that exited is counted once, in its parent's cutime).
 */
export function treeCpuSeconds(root: number): number {
  let total = 0;
  for (const s of tree(root).values()) total += s.self + s.reaped;
  return total;
}

/** CPU seconds of one process (all its threads), without its children. */
export function processCpuSeconds(pid: number): number {
  return stat(pid)?.self ?? 0;
}

/** The pids of a process tree, root first. */
export function treePids(root: number): number[] {
  return [...tree(root).keys()];
}

function rssKbOf(pid: number): number {
  try {
    return Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** A process's API_PROCESS_ROLE (`serve`, `refresh`), or `primary` without one. */
function roleOf(pid: number): string {
  try {
    return /(?:^|\0)API_PROCESS_ROLE=([^\0]*)/.exec(readFileSync(`/proc/${pid}/environ`, 'utf8'))?.[1] || 'primary';
  } catch {
    return 'primary';
  }
}

/** Each member's own CPU seconds (its reaped children apart), keyed `<role>:<pid>`. */
export function treeCpuSecondsByProcess(root: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [pid, s] of tree(root)) out[`${roleOf(pid)}:${pid}`] = s.self;
  return out;
}

/**
 * PostgreSQL's CPU seconds by kind of process, from each one's title
 * (`postgres: walwriter`, `postgres: autovacuum worker`, …): `backend` for
 * every connection's process, `postmaster` for the root.
 */
export function postgresCpuSecondsByKind(root: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [pid, s] of tree(root)) {
    let kind = 'postmaster';
    if (pid !== root) {
      let title = '';
      try {
        title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0+$/, '');
      } catch {
        // gone
      }
      const m = /^postgres: (.*)$/.exec(title);
      const known = ['autovacuum launcher', 'autovacuum worker', 'walwriter', 'checkpointer', 'background writer', 'logical replication launcher', 'walsummarizer', 'io worker'];
      kind = m ? (known.find((k) => m[1]!.startsWith(k)) ?? 'backend') : 'other';
    }
    out[kind] = (out[kind] ?? 0) + s.self;
  }
  return out;
}

/** Resident memory of a process tree: the sum of its members' VmRSS (shared pages counted in each), kB, and how many processes. */
export function treeRssKb(root: number): { kb: number; processes: number } {
  const pids = treePids(root);
  return { kb: pids.reduce((s, pid) => s + rssKbOf(pid), 0), processes: pids.length };
}

/**
 * A process tree's resident memory by what each process is: its
 * API_PROCESS_ROLE (`serve`, `refresh`; none: `primary`), summed per role, kB.
 * Says which of an API's processes grew, where the tree's sum cannot.
 */
export function treeRssKbByRole(root: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const pid of treePids(root)) {
    const role = roleOf(pid);
    out[role] = (out[role] ?? 0) + rssKbOf(pid);
  }
  return out;
}

/** The machine's busy and total CPU seconds since boot, over all cores (/proc/stat). */
export function machineCpu(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line;
  const busy = user + nice + system + irq + softirq + steal;
  return { busy: busy / CLK_TCK, total: (busy + idle + iowait) / CLK_TCK };
}

/** `uptime`'s load averages and the CPU count, for the record of what else ran. */
export function machineLoad(): { loadavg: [number, number, number]; cpus: number } {
  const [a = 0, b = 0, c = 0] = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);
  return { loadavg: [a, b, c], cpus: readFileSync('/proc/cpuinfo', 'utf8').split('\n').filter((l) => l.startsWith('processor')).length };
}

/**
 * Proportional memory of a process tree (the sum of its members' Pss from smaps_rollup, kB):
 * a page shared by k processes counts 1/k in each, so PostgreSQL's shared buffers count once,
 * not once per backend as in the RSS sum. 0 where smaps_rollup is not readable.
 */
export function treePssKb(root: number): number {
  let total = 0;
  for (const pid of treePids(root)) {
    try {
      total += Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
    } catch {
      // gone, or not ours to read
    }
  }
  return total;
}
