/**
 * The installed OS's first-boot reporter: what busybox init runs once when
 * Landfall's discovery OS boots from the disk the agent installed it to
 * (landfall.installed=1; see agent/executors/landfall-disk.ts). It plays the
 * part the assisted-installer's post-reboot side plays on a real host: it
 * reports the host's remaining install stages over the same API, with the
 * agent credentials the install copied to the disk.
 *
 *   node first-boot.js [--installed FILE] [--env FILE] [--ignition-report FILE]
 *
 * What is real and what is not, so the reports say so:
 * - real: the host booted from its disk (this program runs only there), the
 *   role Ignition written by the install was read from the disk and its
 *   files applied (/init ran ignition-apply before this);
 * - not real: this OS has no kubelet, no kubeadm and no container runtime, so
 *   the role Ignition's units are not run, nothing joins a Kubernetes
 *   cluster, and the "Joined" stage and the monitored operators reported
 *   available (on the host that plays the in-cluster controller: the single
 *   node or the bootstrap host) are simulated, and each report says so.
 *
 * Stages after Rebooting come from src/domain/install-stages.ts for the
 * host's role. A reboot of the installed OS resumes after the stage the
 * service last recorded and reports nothing once the host is installed.
 */
import { readFileSync } from 'node:fs';
import { loadAgentConfig } from '../agent/config';
import { backoffMs, createDispatcher, ServiceClient, sleep } from '../agent/service-client';
import { STAGES_BY_ROLE, stageRole, type HostStage } from '../src/domain/install-stages';

/** /etc/landfall/installed.json, written by the install (landfall-disk.ts). */
export interface InstalledFacts {
  host_id: string;
  infra_env_id: string;
  cluster_id: string;
  role: 'bootstrap' | 'master' | 'worker' | 'arbiter';
  control_plane_count: number;
  /** Day 2: the host joined a running cluster (absent on a day-1 install). */
  join_existing_cluster?: boolean;
  boot_device: string;
  installed_at: string;
}

export const SIMULATED = 'simulated by the Landfall installed OS, which runs no Kubernetes';

/** The stages this host still has to report, after `current` (what the service has), never before Rebooting's successor. */
export function remainingStages(f: Pick<InstalledFacts, 'role' | 'control_plane_count' | 'join_existing_cluster'>, current: string | undefined): HostStage[] {
  const stages = STAGES_BY_ROLE[stageRole(f.role === 'bootstrap' ? 'master' : f.role, f.role === 'bootstrap', f.control_plane_count, Boolean(f.join_existing_cluster))];
  const first = stages.indexOf('Rebooting') + 1;
  const at = current ? stages.indexOf(current as HostStage) : -1;
  return stages.slice(Math.max(first, at + 1));
}

/** Whether this host plays the in-cluster controller's part (finalizing): the single node, or the bootstrap host. */
export function playsController(f: Pick<InstalledFacts, 'role' | 'control_plane_count'>): boolean {
  return f.role === 'bootstrap' || (f.control_plane_count === 1 && f.role === 'master');
}

export function stageInfo(stage: HostStage, f: InstalledFacts, ignition: { files: number; skipped: string[] }): string {
  switch (stage) {
    case 'Waiting for ignition':
      return `booted from ${f.boot_device}; role Ignition read from the disk`;
    case 'Configuring':
      return `role Ignition applied from ${f.boot_device}: ${ignition.files} files${ignition.skipped.length ? `; not run (no kubeadm/kubelet in this OS): ${ignition.skipped.join(', ')}` : ''}`;
    case 'Joined':
      return `${SIMULATED}: no node joined a cluster`;
    case 'Done':
      return `installed OS running from ${f.boot_device}; Kubernetes stages ${SIMULATED}`;
    default:
      return '';
  }
}

/** KEY=VALUE lines (the agent's EnvironmentFile). */
export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line.trim());
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

const say = (msg: string) => process.stdout.write(`landfall-first-boot: ${msg}\n`);

async function main(argv: string[]): Promise<void> {
  const arg = (name: string, dflt: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1]! : dflt;
  };
  const facts = JSON.parse(readFileSync(arg('--installed', '/etc/landfall/installed.json'), 'utf8')) as InstalledFacts;
  const cfg = loadAgentConfig({ env: parseEnvFile(readFileSync(arg('--env', '/etc/landfall/agent.env'), 'utf8')) });
  let ignition = { files: 0, skipped: [] as string[] };
  try {
    const reports = readFileSync(arg('--ignition-report', '/run/landfall/ignition-report.json'), 'utf8').trim().split('\n');
    const r = JSON.parse(reports[reports.length - 1]!) as { files: string[]; skippedServices?: string[] };
    ignition = { files: r.files.length, skipped: r.skippedServices ?? [] };
  } catch {
    say('no Ignition report from /init: the role Ignition was not applied');
  }
  const client = new ServiceClient(cfg, createDispatcher(cfg).dispatcher);
  const hostPath = `/infra-envs/${facts.infra_env_id}/hosts/${facts.host_id}`;
  say(`host ${facts.host_id} (${facts.role}) booted from ${facts.boot_device}; reporting to ${cfg.serviceUrl}`);

  // Until the service answers: the network may still be coming up.
  let host: { status: string; progress?: { current_stage?: string } } | undefined;
  for (let attempt = 0; !host; attempt++) {
    try {
      const r = await client.request('GET', hostPath);
      if (r.status === 200) host = r.json();
      else say(`the service answered ${r.status} for this host: ${r.text.slice(0, 200)}`);
    } catch (err) {
      say(`cannot reach the service yet: ${(err as Error).message}`);
    }
    if (!host) await sleep(backoffMs(Math.min(attempt, 5), 1000, 30_000) + 1000);
  }
  const stages = host.status === 'installed' ? [] : remainingStages(facts, host.progress?.current_stage);
  for (const stage of stages) {
    const r = await client.request('PUT', `${hostPath}/progress`, { current_stage: stage, progress_info: stageInfo(stage, facts, ignition) });
    if (r.status === 409 && /is not installing/.test(r.text)) {
      say(`the service no longer installs this host (${r.text.slice(0, 200)}): stopping`);
      return;
    }
    if (r.status >= 300) throw new Error(`the service refused stage ${stage}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
    say(`reported stage ${stage}`);
  }
  if (!stages.length) say(`nothing to report: the service has this host ${host.status} at stage ${host.progress?.current_stage ?? '(none)'}`);
  if (playsController(facts)) await playController(client, facts);
}

/**
 * The in-cluster controller's report, simulated: once the cluster is
 * finalizing, every operator the service monitors is reported available with
 * a status_info that says it is simulated.
 */
async function playController(client: ServiceClient, facts: InstalledFacts): Promise<void> {
  const deadline = Date.now() + 60 * 60_000;
  let reported = false;
  while (Date.now() < deadline) {
    const r = await client.request('GET', `/clusters/${facts.cluster_id}?exclude-hosts=true`).catch(() => undefined);
    const status = r?.status === 200 ? r.json<{ status: string }>().status : undefined;
    if (status === 'finalizing' && !reported) {
      const ops = await client.request('GET', `/clusters/${facts.cluster_id}/monitored-operators`);
      if (ops.status !== 200) throw new Error(`monitored-operators answered HTTP ${ops.status}`);
      for (const { name } of ops.json<Array<{ name: string }>>()) {
        const put = await client.request('PUT', `/clusters/${facts.cluster_id}/monitored-operators`, { name, version: '', status: 'available', status_info: SIMULATED });
        if (put.status >= 300) throw new Error(`the service refused operator ${name}: HTTP ${put.status} ${put.text.slice(0, 300)}`);
        say(`controller (simulated): reported ${name} available`);
      }
      reported = true;
    }
    if (status === 'installed') {
      say('the cluster is installed');
      return;
    }
    if (status && !['installing', 'installing-pending-user-action', 'finalizing'].includes(status)) {
      say(`the cluster is ${status}: the controller's part ends`);
      return;
    }
    await sleep(2000);
  }
  say('the cluster did not finish within an hour: the controller\'s part ends');
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`landfall-first-boot: ${(err as Error)?.message ?? String(err)}\n`);
    process.exit(1);
  });
}
