/**
 * A simulated host: hardware, network behaviour and install behaviour come
 * from a profile (YAML). It runs the same agent loop and reply code as a real
 * host; only this executor differs. Nothing here touches the machine it runs on.
 */
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { parse as parseYaml } from 'yaml';
import { DAY2_CONTROLLER_STAGES, STAGES_BY_ROLE, type StageRole } from '../../src/domain/install-stages';
import { tar } from '../../src/util/tar';
import { ipInCidr } from '../../src/domain/input-rules';
import type { ConnectivityPeer, Disk, Executor, InstallIo, Inventory, LogsContext } from '../types';
import { sleep } from '../service-client';
import { InstallStopped } from '../steps';

/** Lines of its own activity a simulated host keeps for its logs archive (a fleet may hold thousands of hosts). */
const ACTIVITY_LINES = 120;

export interface HostProfile {
  name: string;
  description?: string;
  cpu: { count: number; model?: string; architecture?: string };
  memory_gib: number;
  disks: Array<{ name: string; size_gb: number; type?: string; fsync_ms?: number; removable?: boolean }>;
  nics?: Array<{ name: string; mtu?: number; speed_mbps?: number }>;
  clock_offset_seconds?: number;
  ntp?: 'synced' | 'unreachable' | 'none';
  /** Names that resolve (to this list of IPs); names not listed do not resolve. */
  dns?: Record<string, string[]>;
  link?: { isolated?: boolean; loss_percent?: number; rtt_ms?: number };
  /** no_controller: the host does not play the in-cluster controller (a test plays it over the API). */
  install?: { stage_seconds?: number; fail_at_stage?: string; fail_once?: boolean; reboot_into_discovery?: boolean; no_controller?: boolean };
  /** never_upload: the host gathers nothing and uploads nothing (a host whose logs never arrive). */
  logs?: { never_upload?: boolean };
}

export function parseProfile(yamlText: string): HostProfile {
  const p = parseYaml(yamlText) as HostProfile;
  if (!p || typeof p.name !== 'string' || !p.cpu || typeof p.cpu.count !== 'number' || typeof p.memory_gib !== 'number' || !Array.isArray(p.disks)) {
    throw new Error('a host profile needs name, cpu.count, memory_gib and disks');
  }
  return p;
}

/** What the simulated network knows about every simulated host: addresses and who is cut off. */
export class SimulatedNetwork {
  private readonly hosts = new Map<string, { isolated: boolean; lossPercent: number; rttMs: number; mac: string }>();
  /**
   * othersAnswer: an address of the network this fleet does not simulate answers
   * anyway. A day-2 fleet in its own process joins a cluster whose nodes another
   * fleet simulated (`landfall fleet --joins-running-cluster`): they are up.
   */
  constructor(readonly cidr = '192.168.127.0/24', readonly gateway = '192.168.127.1', private readonly othersAnswer = false) {}
  add(ip: string, info: { isolated: boolean; lossPercent: number; rttMs: number; mac: string }): void {
    this.hosts.set(ip, info);
  }
  get(ip: string) {
    const known = this.hosts.get(ip);
    if (known || !this.othersAnswer || !ipInCidr(ip, this.cidr)) return known;
    return { isolated: false, lossPercent: 0, rttMs: 0.4, mac: '52:54:00:00:00:00' };
  }
  used(): Set<string> {
    return new Set([...this.hosts.keys(), this.gateway]);
  }
}

/** Deterministic ids and addresses: the same fleet seed and index always give the same host. */
export function simulatedIdentity(seed: string, index: number, cidrBase = '192.168.127.0') {
  const h = createHash('sha1').update(`${seed}:${index}`).digest('hex');
  const id = `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
  const mac = `52:54:${h.slice(0, 2)}:${h.slice(2, 4)}:${h.slice(4, 6)}:${h.slice(6, 8)}`;
  const octets = cidrBase.split('.').map(Number);
  // Hosts get .10 onwards of a /16 laid over the base, so thousands fit.
  const n = 10 + index;
  const ip = `${octets[0]}.${octets[1]}.${(octets[2]! + Math.floor(n / 250)) % 256}.${(n % 250) + 2}`;
  return { id, mac, ip };
}

export class SimulatedExecutor implements Executor {
  readonly kind = 'simulated' as const;
  private installing: AbortController | undefined;
  private failures = 0;
  /** Set when the simulated host "reboots into the discovery image" during install. */
  private rebootedIntoDiscovery = false;
  /** What this simulated host did (steps, stages), for its logs archive: the only honest "journal" it has. */
  private readonly activity: string[] = [];

  private note(line: string): void {
    this.activity.push(`${new Date().toISOString()} ${line}`);
    if (this.activity.length > ACTIVITY_LINES) this.activity.splice(0, this.activity.length - ACTIVITY_LINES);
  }

  takeRebootIntoDiscovery(): boolean {
    const r = this.rebootedIntoDiscovery;
    this.rebootedIntoDiscovery = false;
    return r;
  }

  constructor(
    readonly profile: HostProfile,
    private readonly identity: { id: string; mac: string; ip: string; hostname: string },
    private readonly network: SimulatedNetwork,
  ) {
    network.add(identity.ip, { isolated: Boolean(profile.link?.isolated), lossPercent: profile.link?.loss_percent ?? 0, rttMs: profile.link?.rtt_ms ?? 0.4, mac: identity.mac });
  }

  async hostId(): Promise<string> {
    return this.identity.id;
  }

  clockOffsetSeconds(): number {
    return this.profile.clock_offset_seconds ?? 0;
  }

  async inventory(): Promise<Inventory> {
    this.note('inventory: reported the simulated hardware of the profile');
    const p = this.profile;
    const disks: Disk[] = p.disks.map((d, i) => {
      const byId = `/dev/disk/by-id/wwn-0x5000c500${createHash('sha1').update(`${this.identity.id}${d.name}`).digest('hex').slice(0, 8)}`;
      const size = Math.round(d.size_gb * 1e9);
      const reasons = [...(size < 20e9 ? [`Disk is too small (disk only has ${d.size_gb} GB, but 20 GB are required)`] : []), ...(d.removable ? ['Disk is removable'] : [])];
      return {
        id: byId,
        by_id: byId,
        by_path: `/dev/disk/by-path/pci-0000:00:1f.2-ata-${i + 1}`,
        name: d.name,
        path: `/dev/${d.name}`,
        drive_type: d.type ?? 'SSD',
        size_bytes: size,
        removable: Boolean(d.removable),
        bootable: i === 0,
        model: 'Simulated Disk',
        serial: `SIM${i}${this.identity.id.slice(0, 6)}`,
        installation_eligibility: { eligible: reasons.length === 0, not_eligible_reasons: reasons },
      };
    });
    const prefix = this.network.cidr.split('/')[1] ?? '24';
    const nics = p.nics?.length ? p.nics : [{ name: 'eth0' }];
    return {
      hostname: this.identity.hostname,
      cpu: { count: p.cpu.count, architecture: p.cpu.architecture ?? 'x86_64', model_name: p.cpu.model ?? 'Simulated CPU', frequency: 2600, flags: ['sse4_2', 'avx2', 'vmx'] },
      memory: { physical_bytes: p.memory_gib * 1024 ** 3, usable_bytes: Math.round(p.memory_gib * 1024 ** 3 * 0.97), physical_bytes_method: 'dmidecode' },
      disks,
      interfaces: nics.map((n, i) => ({
        name: n.name,
        mac_address: i === 0 ? this.identity.mac : this.identity.mac.replace(/..$/, (x) => ((parseInt(x, 16) + i) % 256).toString(16).padStart(2, '0')),
        ipv4_addresses: i === 0 ? [`${this.identity.ip}/${prefix}`] : [],
        ipv6_addresses: [],
        mtu: n.mtu ?? 1500,
        has_carrier: true,
        speed_mbps: n.speed_mbps ?? 10000,
        type: 'physical',
      })),
      routes: [{ interface: nics[0]!.name, destination: '0.0.0.0', gateway: this.network.gateway, family: 2, metric: 100 }],
      system_vendor: { manufacturer: 'Landfall', product_name: `Simulated ${p.name}`, serial_number: this.identity.id.slice(0, 8), virtual: true },
      boot: { current_boot_mode: 'uefi', secure_boot_state: 'Disabled' },
      tpm_version: '2.0',
    };
  }

  async connectivityCheck(peers: ConnectivityPeer[]): Promise<unknown> {
    this.note(`connectivity-check: ${peers.length} peer(s) on the simulated network`);
    const me = this.network.get(this.identity.ip)!;
    const nic = this.profile.nics?.[0]?.name ?? 'eth0';
    return {
      remote_hosts: peers.map((peer) => {
        const targets = peer.nics.flatMap((n) => n.ip_addresses.map((a) => ({ ip: a.split('/')[0]!, mac: n.mac })));
        return {
          host_id: peer.host_id,
          l2_connectivity: targets.map((t) => {
            const other = this.network.get(t.ip);
            const ok = Boolean(other) && !me.isolated && !other!.isolated;
            return { outgoing_nic: nic, outgoing_ip_address: this.identity.ip, remote_ip_address: t.ip, remote_mac: ok ? other!.mac : '', successful: ok };
          }),
          l3_connectivity: targets.map((t) => {
            const other = this.network.get(t.ip);
            const ok = Boolean(other) && !me.isolated && !other!.isolated;
            const loss = ok ? Math.max(me.lossPercent, other!.lossPercent) : 100;
            // A ping's average moves from one report to the next (±15 %, to the microsecond as ping prints it):
            // a real agent never sends the same connectivity report twice, and neither does this one.
            const rtt = ok ? Math.round((me.rttMs + other!.rttMs) * (0.85 + 0.3 * Math.random()) * 1000) / 1000 : 0;
            return { outgoing_nic: nic, remote_ip_address: t.ip, successful: ok && loss < 100, average_rtt_ms: rtt, packet_loss_percentage: loss };
          }),
          mtu_report: targets.map((t) => ({ outgoing_nic: nic, remote_ip_address: t.ip, mtu_successful: Boolean(this.network.get(t.ip)) && !me.isolated })),
        };
      }),
    };
  }

  async freeNetworkAddresses(cidrs: string[]): Promise<Array<{ network: string; free_addresses: string[] }>> {
    const used = this.network.used();
    return cidrs.map((cidr) => {
      const [base, prefix] = cidr.split('/') as [string, string];
      const size = Math.min(2 ** (32 - Number(prefix)), 256);
      const o = base.split('.').map(Number);
      const free: string[] = [];
      for (let i = 1; i < size - 1; i++) {
        const ip = `${o[0]}.${o[1]}.${o[2]}.${(o[3]! + i) % 256}`;
        if (!used.has(ip)) free.push(ip);
      }
      return { network: cidr, free_addresses: this.profile.link?.isolated ? [] : free };
    });
  }

  async ntpSynchronizer(args: { ntp_source?: string }): Promise<{ ntp_sources: Array<{ source_name: string; source_state: string }> }> {
    const state = this.profile.ntp ?? 'synced';
    if (state === 'none') throw new Error('chronyc is not available on this host: NTP state unknown');
    const sources = (args.ntp_source || 'pool.ntp.org').split(',').filter(Boolean);
    return { ntp_sources: sources.map((s, i) => ({ source_name: s, source_state: state === 'synced' && i === 0 ? 'synced' : 'unreachable' })) };
  }

  async domainResolution(args: { domains: Array<{ domain_name: string }> }): Promise<unknown> {
    const table = this.profile.dns ?? {};
    return {
      resolutions: args.domains.map((d) => {
        const ips = table[d.domain_name] ?? [];
        return { domain_name: d.domain_name, ipv4_addresses: ips.filter((x) => !x.includes(':')), ipv6_addresses: ips.filter((x) => x.includes(':')), cnames: [] };
      }),
    };
  }

  async diskSpeedCheck(args: { path: string }): Promise<{ path: string; io_sync_duration: number }> {
    this.note(`installation-disk-speed-check: ${args.path}`);
    const disk = this.profile.disks.find((d) => `/dev/${d.name}` === args.path || args.path.includes(d.name)) ?? this.profile.disks[0]!;
    return { path: args.path, io_sync_duration: disk.fsync_ms ?? 1 };
  }

  async install(args: Record<string, unknown>, io: InstallIo, signal: AbortSignal): Promise<void> {
    const plan = this.installStages(args);
    this.note(`install: started as ${plan.role} (${plan.stageRole} stages)`);
    return this.runInstall(args, plan, io, signal);
  }

  /**
   * The agent was killed after this host "rebooted" into its installed OS and
   * was started again: the installed side carries on from the stage after
   * the last one reported (a real cluster's controller restarts the same way).
   */
  async resumeInstalled(args: Record<string, unknown>, lastStage: string | undefined, io: InstallIo, signal: AbortSignal): Promise<void> {
    const plan = this.installStages(args);
    const after = Math.max(plan.stages.indexOf('Rebooting'), lastStage ? plan.stages.indexOf(lastStage as (typeof plan.stages)[number]) : -1);
    this.note(`install: resumed in the installed OS after ${lastStage ?? 'Rebooting'} (the agent was restarted)`);
    return this.runInstall(args, { ...plan, stages: plan.stages.slice(after + 1) }, io, signal);
  }

  private installStages(args: Record<string, unknown>) {
    const role = String(args.role ?? 'master');
    const cp = Number(args.control_plane_count ?? 3);
    const day2 = args.join_existing_cluster === true;
    const stageRole: StageRole = day2 ? 'day2' : cp === 1 ? 'sno' : role === 'bootstrap' ? 'bootstrap' : role === 'worker' ? 'worker' : 'master';
    // A day-2 host's installer stops at Rebooting: Joined and Done come from the cluster's controller.
    const stages = STAGES_BY_ROLE[stageRole].filter((s) => s !== 'Copying registry data to disk' && !(day2 && DAY2_CONTROLLER_STAGES.includes(s)));
    return { role, day2, stageRole, stages };
  }

  /** The stages given (all of a role's, or those left after a resume), then the installed side's part. */
  private async runInstall(args: Record<string, unknown>, plan: { role: string; day2: boolean; stages: readonly string[] }, io: InstallIo, signal: AbortSignal): Promise<void> {
    const report = io.report;
    this.installing = new AbortController();
    const stop = AbortSignal.any([signal, this.installing.signal]);
    const { role, day2, stages } = plan;
    const seconds = this.profile.install?.stage_seconds ?? 1;
    for (const stage of stages) {
      if (stop.aborted) {
        this.note('install: stopped on request');
        throw new InstallStopped();
      }
      this.note(`install: stage ${stage}`);
      await report(stage, stage === 'Writing image to disk' ? '100%' : stage === 'Starting installation' || stage === 'Installing' ? role : undefined);
      // A failure happens inside a stage, after the host reported entering it (as a real installer does).
      if (this.profile.install?.fail_at_stage === stage && !(this.profile.install.fail_once && this.failures > 0)) {
        this.failures++;
        this.note(`install: simulated failure at ${stage} (profile install.fail_at_stage)`);
        await report('Failed', `simulated failure at ${stage}`);
        throw new Error(`simulated failure at stage ${stage}`);
      }
      // Before rebooting a host uploads its logs (what the real installer does too).
      if (stage === 'Rebooting') await io.uploadHostLogs?.();
      if (stage === 'Rebooting' && this.profile.install?.reboot_into_discovery) {
        // The boot order put the discovery image first: the host comes back as a discovery host.
        this.rebootedIntoDiscovery = true;
        return;
      }
      await sleep(seconds * 1000, stop);
      // Rebooted into the installed OS: the disk is whole, and what follows is the installed side's.
      if (stage === 'Rebooting' && !stop.aborted) io.rebooted?.();
    }
    if (day2) return this.playDay2Controller(io, stop, seconds);
    // Simulated hosts play the in-cluster controller of their simulated cluster as the real one
    // works: once the service says finalizing, they report available every operator the service
    // lists as monitored (any installed host may be the one that does it: reports are idempotent).
    if (!this.profile.install?.no_controller) {
      const deadline = Date.now() + 300_000;
      while (!stop.aborted && Date.now() < deadline) {
        const status = await io.clusterStatus().catch(() => undefined);
        if (status === 'finalizing' || status === 'installed') {
          if (status === 'finalizing') {
            // The service may be away for a moment (a restart): a controller asks again rather than give up.
            const operators = await io.monitoredOperators().catch(() => undefined);
            if (!operators) {
              await sleep(500, stop);
              continue;
            }
            for (const c of operators) await io.reportComponent(c, 'available');
            this.note(`controller: reported ${operators.join(', ') || 'no operators'} available`);
          }
          // The bootstrap host plays the controller's log upload: once, not once per host. It is often the
          // last host to finish its stages, so another host may already have completed finalizing.
          if (role === 'bootstrap') await io.uploadControllerLogs?.(this.controllerLogs(String(args.cluster_id ?? ''), 'finalizing completed'));
          return;
        }
        if (status && !['installing', 'installing-pending-user-action', 'finalizing'].includes(status)) {
          if (role === 'bootstrap' && status === 'error') await io.uploadControllerLogs?.(this.controllerLogs(String(args.cluster_id ?? ''), 'the installation failed'));
          return;
        }
        await sleep(500, stop);
      }
    }
  }

  /**
   * SIMULATED: what a day-2 host's join looks like from the service. The
   * host "rebooted" into its installed OS, whose Ignition runs kubeadm join;
   * the running cluster's controller then reports the node, as
   * assisted-installer-controller reports nodes: Joined once the node
   * registered, Done once it is Ready. No kubelet runs and no cluster
   * exists here; this host plays that controller over the same API and says
   * so in each report.
   */
  private async playDay2Controller(io: InstallIo, stop: AbortSignal, seconds: number): Promise<void> {
    if (this.profile.install?.no_controller) return;
    await sleep(seconds * 1000, stop);
    if (stop.aborted) throw new InstallStopped();
    await io.report('Joined', `simulated controller: node ${this.identity.hostname} registered with the cluster`);
    this.note('controller (simulated): reported the node Joined');
    await sleep(seconds * 1000, stop);
    if (stop.aborted) throw new InstallStopped();
    await io.report('Done', `simulated controller: node ${this.identity.hostname} is Ready`);
    this.note('controller (simulated): reported the node Done');
  }

  /**
   * A real archive whose every file says it is simulated: the agent's own log
   * lines, what this simulated host did, and its profile. Never a fake journal.
   */
  async logsGather(args: Record<string, unknown>, upload: (tarGz: Buffer) => Promise<void>, _signal?: AbortSignal, context?: LogsContext): Promise<void> {
    if (this.profile.logs?.never_upload) {
      this.note('logs-gather: this profile never uploads logs (logs.never_upload)');
      return;
    }
    const now = new Date();
    const text = (lines: string[]) => Buffer.from(lines.length ? `${lines.join('\n')}\n` : '(nothing recorded)\n');
    const host = { simulated: true, host_id: this.identity.id, hostname: this.identity.hostname, ip: this.identity.ip, mac: this.identity.mac, profile: this.profile.name, reason: args.reason ?? 'logs-gather', gathered_at: now.toISOString() };
    const readme = [
      `SIMULATED HOST LOGS: ${this.identity.hostname} (${this.identity.id})`,
      '',
      `This archive was produced by the Landfall fleet simulator for a simulated host (profile "${this.profile.name}").`,
      'No machine was installed and there is no system journal: the files hold what the agent and the simulated',
      'executor actually did, so a failure can be followed, but nothing here comes from a real operating system.',
      '',
      'host.json      who this host is and why the logs were gathered',
      'agent.log      the agent\'s recent log lines and the steps it ran',
      'activity.log   what the simulated executor did (steps, install stages, simulated failures)',
      'profile.json   the simulated hardware and install behaviour',
    ];
    this.note(`logs-gather: archive built (${String(host.reason)})`);
    await upload(
      gzipSync(
        tar([
          { name: 'README.txt', body: Buffer.from(`${readme.join('\n')}\n`), mtime: now },
          { name: 'host.json', body: Buffer.from(JSON.stringify(host, null, 2)), mtime: now },
          { name: 'agent.log', body: text(context?.agentLog ?? []), mtime: now },
          { name: 'activity.log', body: text(this.activity), mtime: now },
          { name: 'profile.json', body: Buffer.from(JSON.stringify(this.profile, null, 2)), mtime: now },
        ]),
      ),
    );
  }

  /** The simulated controller's archive: what it observed and reported, marked as simulated. */
  private controllerLogs(clusterId: string, reason: string): Buffer {
    const now = new Date();
    const readme = `SIMULATED CONTROLLER LOGS for cluster ${clusterId}\n\nProduced by the Landfall fleet simulator: host ${this.identity.hostname} (${this.identity.id}) played the in-cluster controller.\nThere is no real cluster behind these files.\n`;
    const status = { simulated: true, cluster_id: clusterId, played_by: this.identity.id, reason, gathered_at: now.toISOString() };
    return gzipSync(
      tar([
        { name: 'README.txt', body: Buffer.from(readme), mtime: now },
        { name: 'controller.json', body: Buffer.from(JSON.stringify(status, null, 2)), mtime: now },
        { name: 'activity.log', body: Buffer.from(`${this.activity.filter((l) => /controller|install:/.test(l)).join('\n')}\n`), mtime: now },
      ]),
    );
  }

  async stopInstallation(): Promise<void> {
    this.note('stop-installation: requested by the service');
    this.installing?.abort();
  }
}
