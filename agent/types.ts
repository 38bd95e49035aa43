/** Wire shapes the agent exchanges with the service (assisted-service v2, reference §6–7). */
export interface Step {
  step_type: string;
  step_id: string;
  args?: string[];
}

export interface Steps {
  next_instruction_seconds?: number;
  post_step_action?: 'continue' | 'exit';
  instructions?: Step[];
}

export interface StepResult {
  exit_code: number;
  output: string;
  error: string;
}

export interface Interface {
  name: string;
  mac_address: string;
  ipv4_addresses: string[];
  ipv6_addresses: string[];
  mtu: number;
  has_carrier: boolean;
  speed_mbps: number;
  type: string;
  flags?: string[];
}

export interface Disk {
  id: string;
  by_id?: string;
  by_path?: string;
  name: string;
  path: string;
  drive_type: string;
  size_bytes: number;
  removable?: boolean;
  bootable?: boolean;
  is_installation_media?: boolean;
  vendor?: string;
  model?: string;
  serial?: string;
  wwn?: string;
  hctl?: string;
  installation_eligibility: { eligible: boolean; not_eligible_reasons: string[] };
}

export interface Inventory {
  hostname: string;
  cpu: { count: number; architecture: string; model_name: string; frequency?: number; flags?: string[] };
  memory: { physical_bytes: number; usable_bytes: number; physical_bytes_method?: string };
  disks: Disk[];
  interfaces: Interface[];
  routes: Array<{ interface: string; destination: string; gateway?: string; family: number; metric?: number }>;
  system_vendor: { manufacturer: string; product_name: string; serial_number?: string; virtual: boolean };
  boot: { current_boot_mode: 'uefi' | 'bios'; secure_boot_state?: string };
  tpm_version?: string;
}

/**
 * Everything the agent does to the machine goes through an executor, so the
 * same loop runs on real hardware (LinuxExecutor) and in the fleet simulator
 * (SimulatedExecutor). Each method gets the step's parsed argument.
 */
export interface Executor {
  readonly kind: 'linux' | 'simulated';
  /** The host id the agent registers with: stable across reboots of the same machine. */
  hostId(): Promise<string>;
  inventory(): Promise<Inventory>;
  connectivityCheck(peers: ConnectivityPeer[], signal: AbortSignal): Promise<unknown>;
  freeNetworkAddresses(cidrs: string[], signal: AbortSignal): Promise<Array<{ network: string; free_addresses: string[] }>>;
  ntpSynchronizer(args: { ntp_source?: string }, signal: AbortSignal): Promise<{ ntp_sources: Array<{ source_name: string; source_state: string }> }>;
  domainResolution(args: { domains: Array<{ domain_name: string }> }, signal: AbortSignal): Promise<unknown>;
  diskSpeedCheck(args: { path: string }, signal: AbortSignal): Promise<{ path: string; io_sync_duration: number }>;
  install(args: Record<string, unknown>, io: InstallIo, signal: AbortSignal): Promise<void>;
  /**
   * The agent was restarted while an install step it started was past the
   * host's reboot into the installed OS (io.rebooted): the rest of the step is
   * the installed cluster's, which carries on after a restart. Only an
   * executor whose install step plays that side (the simulated one) has it.
   */
  resumeInstalled?(args: Record<string, unknown>, lastStage: string | undefined, io: InstallIo, signal: AbortSignal): Promise<void>;
  /** Gathers this host's logs into one tar.gz and hands it to `upload`; `context` carries what the agent itself knows (its recent log lines). */
  logsGather(args: Record<string, unknown>, upload: (tarGz: Buffer) => Promise<void>, signal: AbortSignal, context?: LogsContext): Promise<void>;
  stopInstallation(signal: AbortSignal): Promise<void>;
  /** Seconds the host clock differs from true time (simulated skew); 0 on real hosts. */
  clockOffsetSeconds(): number;
  /** True once after the host rebooted into the discovery image mid-install: the agent registers again. */
  takeRebootIntoDiscovery?(): boolean;
}

/** What an install can tell the service: the host's stages, and (for the host acting as controller) the cluster side. */
export interface InstallIo {
  report(stage: string, info?: string): Promise<void>;
  clusterStatus(): Promise<string | undefined>;
  reportComponent(name: string, status: 'available' | 'progressing' | 'failed'): Promise<void>;
  /** What the service asks the controller to report (GET monitored-operators), by name. */
  monitoredOperators(): Promise<string[]>;
  /** Gathers and uploads this host's logs (logs `requested`, then `collecting`); called right before the host reboots. */
  uploadHostLogs?(): Promise<void>;
  /** Uploads the (simulated) in-cluster controller's logs as logs_type=controller. */
  uploadControllerLogs?(tarGz: Buffer): Promise<void>;
  /** The host is now running its installed OS: the image is written whole (kept on disk, read after a restart). */
  rebooted?(): void;
}

/** What the agent hands an executor gathering logs. */
export interface LogsContext {
  /** The agent's own recent log lines and the steps it ran, oldest first. */
  agentLog: string[];
}

export interface ConnectivityPeer {
  host_id: string;
  nics: Array<{ name?: string; mac?: string; ip_addresses: string[] }>;
}
