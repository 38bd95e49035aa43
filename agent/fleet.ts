/**
 * `landfall fleet`: many simulated hosts against one service, for the demo,
 * the tests and the load benchmarks. Hosts are async agents in this one
 * process sharing a connection pool (thousands fit); with --netns each host
 * also gets a network namespace so connectivity checks are real pings.
 * Bounded: it stops after --duration-seconds, or on Ctrl-C, and removes every
 * namespace it made.
 */
import { setMaxListeners } from 'node:events';
import path from 'node:path';
import { Agent as HttpAgent } from 'undici';
import { HostAgent, type AgentLog } from './agent';
import { AGENT_VERSION, type AgentConfig } from './config';
import { SimulatedExecutor, SimulatedNetwork, simulatedIdentity } from './executors/simulated';
import { arpingFrom, createTopology, netnsAvailable, pingFrom, type NetnsTopology } from './netns';
import { expandMix, loadProfile } from './profiles';
import { ServiceClient, type RequestObserver } from './service-client';
import type { ConnectivityPeer } from './types';

export interface FleetOptions {
  serviceUrl: string;
  infraEnvId: string;
  agentToken?: string;
  count: number;
  mix: string;
  seed?: string;
  durationSeconds: number;
  pollIntervalSeconds?: number;
  netns?: boolean;
  /** The first host's index: a second fleet on the same network (day 2) takes the next addresses and names. */
  firstIndex?: number;
  /** The simulated network to join (in-process only): a day-2 fleet shares the first fleet's, so its hosts reach the installed ones. */
  network?: SimulatedNetwork;
  /** A day-2 fleet in its own process: the running cluster's nodes (simulated elsewhere) answer on the simulated network. */
  joinsRunningCluster?: boolean;
  /**
   * Each host keeps its outbox and started-steps ledger under <stateDir>/<host id>, as a real
   * agent does under /var/lib/landfall-agent: a fleet process killed and started again (same
   * infra-env and seed, so the same host ids) resumes as restarted agents on hosts that stayed up.
   */
  stateDir?: string;
  /** Spread the start of the hosts over this many seconds (a fleet does not boot in one instant). */
  rampSeconds?: number;
  /** Most keep-alive connections this fleet's hosts share (default 64); many fleets in one process need fewer each. */
  connections?: number;
  /** Every step's result posted, identical or not (the upstream agent's behaviour): HostAgent's answerEveryStep. */
  answerEveryStep?: boolean;
  onProgress?: (line: string) => void;
  log?: AgentLog;
  /** Told of every answer an agent gets, with its latency (bench/fleet-real.ts). */
  observe?: RequestObserver;
  /** Handed a reader of the fleet's running totals once the agents exist (for measurements over a window). */
  onTotals?: (read: () => FleetTotals) => void;
}

export type FleetTotals = ReturnType<typeof totals>;

export interface FleetReport {
  hosts: Array<{ id: string; profile: string; hostname: string; ip: string }>;
  registered: number;
  polls: number;
  replies: number;
  /** Replies held back because the service already has an identical result. */
  skipped: number;
  failures: number;
  /** Steps handed out, by type. */
  steps: Record<string, number>;
  netns?: { used: boolean; reason?: string };
}

class NetnsExecutor extends SimulatedExecutor {
  constructor(profile: ConstructorParameters<typeof SimulatedExecutor>[0], identity: ConstructorParameters<typeof SimulatedExecutor>[1], network: SimulatedNetwork, private readonly ns: string) {
    super(profile, identity, network);
  }
  override async connectivityCheck(peers: ConnectivityPeer[]): Promise<unknown> {
    return {
      remote_hosts: await Promise.all(
        peers.map(async (peer) => {
          const targets = peer.nics.flatMap((n) => n.ip_addresses.map((a) => a.split('/')[0]!));
          const probes = await Promise.all(targets.map(async (t) => ({ t, l3: await pingFrom(this.ns, t, 2), l2: await arpingFrom(this.ns, t) })));
          return {
            host_id: peer.host_id,
            l2_connectivity: probes.map((p) => ({ outgoing_nic: 'eth0', remote_ip_address: p.t, remote_mac: p.l2.mac, successful: p.l2.successful })),
            l3_connectivity: probes.map((p) => ({ outgoing_nic: 'eth0', remote_ip_address: p.t, successful: p.l3.successful, average_rtt_ms: p.l3.rttMs, packet_loss_percentage: p.l3.lossPercent })),
            mtu_report: [],
          };
        }),
      ),
    };
  }
}

const quietLog: AgentLog = { info: () => undefined, warn: () => undefined };

export async function runFleet(o: FleetOptions, signal: AbortSignal): Promise<FleetReport> {
  if (!(o.count >= 1 && o.count <= 20000)) throw new Error('--count must be between 1 and 20000');
  if (!(o.durationSeconds > 0 && o.durationSeconds <= 24 * 3600)) throw new Error('--duration-seconds must be between 1 and 86400');
  const names = expandMix(o.mix, o.count);
  const profiles = new Map(Array.from(new Set(names), (n) => [n, loadProfile(n)]));
  const seed = o.seed ?? `${o.infraEnvId}`;
  const network = o.network ?? new SimulatedNetwork(undefined, undefined, Boolean(o.joinsRunningCluster));
  const first = o.firstIndex ?? 0;
  const report: FleetReport = { hosts: [], registered: 0, polls: 0, replies: 0, skipped: 0, failures: 0, steps: {} };

  let topology: NetnsTopology | undefined;
  if (o.netns) {
    const avail = await netnsAvailable();
    report.netns = { used: avail.ok, reason: avail.reason };
    if (!avail.ok) throw new Error(`--netns is not possible here: ${avail.reason}`);
    topology = await createTopology(o.count);
  }

  const stop = new AbortController();
  // Every sleeping agent listens on this one signal: thousands of listeners are expected, not a leak.
  setMaxListeners(0, stop.signal);
  const onAbort = () => stop.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => stop.abort(), o.durationSeconds * 1000);
  // One pool for the whole fleet: thousands of hosts must not mean thousands of sockets.
  const dispatcher = new HttpAgent({ connections: o.connections ?? 64, pipelining: 1, keepAliveTimeout: 30000 });
  const agents: HostAgent[] = [];
  try {
    for (let i = 0; i < o.count; i++) {
      const profile = profiles.get(names[i]!)!;
      const ident = simulatedIdentity(seed, first + i);
      const identity = { ...ident, ip: topology ? topology.hosts[i]!.ip : ident.ip, hostname: `${profile.name}-${first + i}` };
      const executor = topology ? new NetnsExecutor(profile, identity, network, topology.hosts[i]!.ns) : new SimulatedExecutor(profile, identity, network);
      if (topology && profile.link?.isolated) await topology.cut(i);
      const cfg: AgentConfig = { serviceUrl: o.serviceUrl.replace(/\/+$/, ''), infraEnvId: o.infraEnvId, agentToken: o.agentToken ?? '', agentVersion: AGENT_VERSION, pollIntervalSeconds: o.pollIntervalSeconds, ...(o.stateDir ? { outboxDir: path.join(o.stateDir, identity.id) } : {}) };
      agents.push(new HostAgent(cfg, executor, new ServiceClient(cfg, dispatcher, undefined, o.observe), o.log ?? quietLog, { writeStatus: false, recentLogLines: 60, answerEveryStep: o.answerEveryStep }));
      report.hosts.push({ id: identity.id, profile: profile.name, hostname: identity.hostname, ip: identity.ip });
    }
    o.onTotals?.(() => totals(agents));
    const progress = setInterval(() => {
      const s = totals(agents);
      o.onProgress?.(`fleet: ${s.registered}/${o.count} registered, ${s.polls} polls, ${s.replies} replies, ${s.failures} failures`);
    }, 5000);
    try {
      const ramp = (o.rampSeconds ?? Math.min(10, o.count / 200)) * 1000;
      await Promise.all(
        agents.map(async (a, i) => {
          if (ramp > 0) await new Promise((r) => setTimeout(r, (ramp * i) / o.count));
          if (!stop.signal.aborted) await a.run(stop.signal);
        }),
      );
    } finally {
      clearInterval(progress);
    }
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
    await dispatcher.close().catch(() => undefined);
    await topology?.destroy();
  }
  Object.assign(report, totals(agents));
  return report;
}

function totals(agents: HostAgent[]) {
  const steps: Record<string, number> = {};
  for (const a of agents) for (const [type, n] of Object.entries(a.stats.steps)) steps[type] = (steps[type] ?? 0) + n;
  return agents.reduce(
    (acc, a) => ({ ...acc, registered: acc.registered + (a.stats.registrations > 0 ? 1 : 0), polls: acc.polls + a.stats.polls, replies: acc.replies + a.stats.replies, skipped: acc.skipped + a.stats.repliesSkipped, failures: acc.failures + a.stats.failures }),
    { registered: 0, polls: 0, replies: 0, skipped: 0, failures: 0, steps },
  );
}
