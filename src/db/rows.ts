/** Row shapes of the core tables (see migrations/20261121070000_core_resources.ts). */
export type Doc = Record<string, unknown>;

export interface ClusterRow {
  id: string;
  owner: string;
  name: string;
  openshift_version: string;
  status: string;
  status_info: string;
  status_updated_at: Date;
  pull_secret: string | null;
  install_attempt: number;
  doc: Doc;
  /** The controller's verdict the install workflow has not been told yet (services/report-delivery.ts). */
  components_pending?: unknown;
  /** Digest of what the poll's step arguments are built from, written by the refresh (step-args.ts). */
  step_view_stamp?: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface InfraEnvRow {
  id: string;
  owner: string;
  name: string;
  cluster_id: string | null;
  pull_secret: string | null;
  doc: Doc;
  created_at: Date;
  updated_at: Date;
}

export interface HostRow {
  id: string;
  infra_env_id: string;
  cluster_id: string | null;
  status: string;
  status_info: string;
  status_updated_at: Date;
  role: string;
  suggested_role: string;
  bootstrap: boolean;
  requested_hostname: string | null;
  inventory: string | null;
  doc: Doc;
  checked_in_at: Date | null;
  agent_timestamp: string | null;
  discovery_agent_version: string | null;
  /** What repeating discovery steps went out last, and when (agent-service.ts). */
  step_sends?: Record<string, { d: string; at: number }>;
  /** The report the install workflow has not been told yet (services/report-delivery.ts). */
  report_pending?: unknown;
  /** Moves with every write of the row (refresh-service.ts caches the large columns by it). */
  facts_version?: string;
  created_at: Date;
  updated_at: Date;
}

export interface StepRow {
  seq: string;
  infra_env_id: string;
  host_id: string;
  step_id: string;
  step_type: string;
  args: string[];
  state: 'pending' | 'sent' | 'replied' | 'closed';
  exit_code: number | null;
  output: string | null;
  error: string | null;
  created_at: Date;
  sent_at: Date | null;
  /** How many times the step was handed out (first send and resends). */
  attempts: number;
  replied_at: Date | null;
}

export interface EventRow {
  seq: string;
  name: string;
  severity: 'info' | 'warning' | 'error' | 'critical';
  category: string;
  message: string;
  event_time: Date;
  cluster_id: string | null;
  host_id: string | null;
  infra_env_id: string | null;
  request_id: string | null;
  props: Doc | null;
}

export interface ManifestRow {
  cluster_id: string;
  folder: string;
  file_name: string;
  content: string;
  manifest_source: string;
  created_at: Date;
  updated_at: Date;
}
