/**
 * What `landfall install --wait` shows while it follows an install. On a
 * terminal: a cluster bar, one bar per host with its stage and percentage,
 * and the latest events below them, redrawn in place (cli-progress). Anywhere
 * else (a pipe, a CI log): one plain line per change, so logs stay readable.
 */
import { MultiBar, type SingleBar } from 'cli-progress';
import type { Json } from './api-client';
import { duration } from './output';
import { eventLine } from './commands/events';
import { hostName, hostRole } from './commands/hosts';

export interface InstallView {
  cluster(c: Json): void;
  event(e: Json): void;
  stop(): void;
}

export function createInstallView(out: NodeJS.WriteStream, startedAt: number): InstallView {
  return out.isTTY ? new BarsView(out, startedAt) : new LinesView(out);
}

const hostStage = (h: Json): string => {
  const stage = h.progress?.current_stage as string | undefined;
  if (h.status === 'error') return `failed${h.progress?.failed_at_stage ? ` at ${h.progress.failed_at_stage}` : ''}: ${h.status_info ?? ''}`;
  if (h.status === 'installing-pending-user-action') return `waiting for you: ${h.status_info ?? ''}`;
  return stage ? `${stage}${h.progress?.progress_info ? ` (${h.progress.progress_info})` : ''}` : h.status;
};

/** The API's figure; while it still says 0 (it moves at finalizing), the mean of the hosts' percentages. */
export function clusterPercentage(c: Json): number {
  const api = Number(c.progress?.total_percentage ?? 0);
  const hosts = (c.hosts ?? []) as Json[];
  if (api > 0 || !hosts.length || c.status === 'preparing-for-installation') return api;
  return Math.floor(hosts.reduce((s, h) => s + Number(h.progress?.installation_percentage ?? 0), 0) / hosts.length);
}

const sortHosts = (hosts: Json[]) => [...hosts].sort((a, b) => Number(Boolean(b.bootstrap)) - Number(Boolean(a.bootstrap)) || hostRole(a).localeCompare(hostRole(b)) || hostName(a).localeCompare(hostName(b)));

class BarsView implements InstallView {
  private readonly bars: MultiBar;
  private clusterBar?: SingleBar;
  private readonly hostBars = new Map<string, SingleBar>();
  private readonly eventBars: SingleBar[] = [];
  private readonly recent: string[] = [];
  private names = new Map<string, string>();
  private labelWidth = 10;

  constructor(
    private readonly out: NodeJS.WriteStream,
    private readonly startedAt: number,
  ) {
    this.bars = new MultiBar({ stream: out, hideCursor: true, clearOnComplete: false, stopOnComplete: false, barsize: 24, fps: 8, format: '{label} [{bar}] {percentage}% {info}', barCompleteChar: '█', barIncompleteChar: '░', autopadding: true });
  }

  cluster(c: Json): void {
    const hosts = sortHosts(c.hosts ?? []);
    this.names = new Map(hosts.map((h) => [h.id, hostName(h)]));
    this.labelWidth = Math.max(this.labelWidth, ...hosts.map((h) => `${hostName(h)} ${hostRole(h)}`.length), `cluster ${c.name}`.length);
    const info = `${c.status}${c.status_info ? `: ${c.status_info}` : ''} (${duration((Date.now() - this.startedAt) / 1000)})`;
    const pct = clusterPercentage(c);
    if (!this.clusterBar) this.clusterBar = this.bars.create(100, pct, { label: `cluster ${c.name}`.padEnd(this.labelWidth), info });
    this.clusterBar.update(pct, { label: `cluster ${c.name}`.padEnd(this.labelWidth), info });
    for (const h of hosts) {
      const label = `${hostName(h)} ${hostRole(h)}`.padEnd(this.labelWidth);
      const value = Number(h.progress?.installation_percentage ?? 0);
      const payload = { label, info: hostStage(h) };
      const bar = this.hostBars.get(h.id);
      if (bar) bar.update(value, payload);
      else this.hostBars.set(h.id, this.bars.create(100, value, payload));
    }
    if (!this.eventBars.length) {
      const rows = (this.out.rows ?? 40) - this.hostBars.size - 3;
      const n = Math.max(3, Math.min(12, rows));
      this.eventBars.push(this.bars.create(1, 0, { text: '── events ──' }, { format: '{text}' }));
      for (let i = 0; i < n; i++) this.eventBars.push(this.bars.create(1, 0, { text: '' }, { format: '{text}' }));
    }
  }

  event(e: Json): void {
    const slots = this.eventBars.length - 1;
    if (slots <= 0) return;
    this.recent.push(eventLine(e, this.names));
    while (this.recent.length > slots) this.recent.shift();
    this.recent.forEach((line, i) => this.eventBars[i + 1]!.update(0, { text: line }));
  }

  stop(): void {
    this.bars.update();
    this.bars.stop();
  }
}

class LinesView implements InstallView {
  private lastCluster = '';
  private readonly lastHost = new Map<string, string>();
  private names = new Map<string, string>();

  constructor(private readonly out: NodeJS.WriteStream) {}

  cluster(c: Json): void {
    this.names = new Map((c.hosts ?? []).map((h: Json) => [h.id, hostName(h)]));
    const line = `cluster ${c.name}: ${c.status} ${clusterPercentage(c)}%${c.status_info ? ` (${c.status_info})` : ''}`;
    if (line !== this.lastCluster) this.out.write(line + '\n');
    this.lastCluster = line;
    for (const h of sortHosts(c.hosts ?? [])) {
      const hl = `host ${hostName(h)} ${hostRole(h)}: ${h.progress?.installation_percentage ?? 0}% ${hostStage(h)}`;
      if (this.lastHost.get(h.id) !== hl) this.out.write(hl + '\n');
      this.lastHost.set(h.id, hl);
    }
  }

  event(e: Json): void {
    this.out.write(`event ${eventLine(e, this.names)}\n`);
  }

  stop(): void {}
}
