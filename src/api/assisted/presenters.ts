/**
 * Rows → API objects of the assisted-service v2 wire format. Only these
 * functions decide what leaves the service: pull secrets are never copied
 * (only `pull_secret_set`), JSON-string fields stay strings, and an unset time
 * is never "" (the Python client parses every date-time). The times AS always
 * sends are sent as its Go zero time until they happen: clients test for that
 * value (aicli's `wait cluster` waits for install_completed_at to leave it).
 */
import { clusterProgress } from '../../domain/install-stages';
import type { ClusterRow, EventRow, HostRow, InfraEnvRow, ManifestRow } from '../../db/rows';

export const BASE_PATH = '/api/assisted-install';

const iso = (d: Date | string | null | undefined): string | undefined => (d ? new Date(d).toISOString() : undefined);

/** AS's unset time (Go's zero time.Time as go-swagger writes it). */
export const ZERO_TIME = '0001-01-01T00:00:00.000Z';
/** A time AS always sends: the zero time until it is set. */
const always = (d: Date | string | null | undefined): string => iso(d) ?? ZERO_TIME;
/** A stored document field holding an ISO time (or nothing). */
const docTime = (v: unknown): string => always(typeof v === 'string' ? v : undefined);

/** What AS reports for a cluster whose disks are not encrypted (its swagger defaults); Landfall encrypts none. */
const NO_DISK_ENCRYPTION = { enable_on: 'none', mode: 'tpmv2' };

function dropUndefined<T extends Record<string, unknown>>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

/** The doc field with the digest of what a refresh reads of the host's connectivity report (agent-service replyFacts). */
export const CONNECTIVITY_FACTS_FIELD = 'connectivity_facts';

/** Kept on the host for the service's own bookkeeping, never sent. */
const INTERNAL_HOST_FIELDS = ['inventory_digest', 'day2_prepared', CONNECTIVITY_FACTS_FIELD];

/** The answer to an agent's registration: the host, and what the agent's step runner runs (assisted-service's shape). */
export function presentRegistration(h: HostRow) {
  const args = JSON.stringify({ infra_env_id: h.infra_env_id, host_id: h.id, agent_version: h.discovery_agent_version ?? '' });
  return { ...presentHost(h), next_step_runner_command: { command: '', args: [args], retry_seconds: 0 } };
}

export function presentHost(h: HostRow) {
  const d = { ...(h.doc as Record<string, unknown>) };
  for (const k of INTERNAL_HOST_FIELDS) delete d[k];
  return dropUndefined({
    ...d,
    // A host that joins a running cluster is AddToExistingClusterHost (set at registration), as in assisted-service.
    kind: (d.kind as string | undefined) ?? 'Host',
    id: h.id,
    href: `${BASE_PATH}/v2/infra-envs/${h.infra_env_id}/hosts/${h.id}`,
    infra_env_id: h.infra_env_id,
    cluster_id: h.cluster_id ?? undefined,
    status: h.status,
    status_info: h.status_info,
    status_updated_at: iso(h.status_updated_at),
    role: h.role,
    suggested_role: h.suggested_role,
    bootstrap: h.bootstrap,
    // As AS: the name set by the user, else the agent's, else the host id (before any inventory).
    requested_hostname: h.requested_hostname ?? hostnameFromInventory(h.inventory) ?? h.id,
    inventory: h.inventory ?? undefined,
    checked_in_at: always(h.checked_in_at),
    // A host row is made when its agent registers.
    registered_at: always(h.created_at),
    logs_started_at: docTime(d.logs_started_at),
    logs_collected_at: docTime(d.logs_collected_at),
    timestamp: h.agent_timestamp !== null ? Number(h.agent_timestamp) : undefined,
    discovery_agent_version: h.discovery_agent_version ?? undefined,
    created_at: iso(h.created_at),
    updated_at: iso(h.updated_at),
  });
}

/** The effective hostname when the user set none: what the agent reported. */
/** The name a host is shown by: the user's, else the one it reported, else its id. */
export function hostDisplayName(h: Pick<HostRow, 'id' | 'requested_hostname' | 'inventory'>): string {
  return h.requested_hostname ?? hostnameFromInventory(h.inventory) ?? h.id;
}

export function hostnameFromInventory(inventory: string | null): string | undefined {
  if (!inventory) return undefined;
  try {
    const name = (JSON.parse(inventory) as { hostname?: unknown }).hostname;
    return typeof name === 'string' && name !== '' ? name : undefined;
  } catch {
    return undefined;
  }
}

export function presentCluster(c: ClusterRow, hosts?: HostRow[]) {
  const d = c.doc as Record<string, unknown>;
  // With its hosts at hand, the install progress is derived from their stages (stored only at the end).
  const derived = hosts
    ? clusterProgress(
        c.status,
        (d.control_plane_count as number | undefined) ?? 3,
        hosts.map((h) => ({ role: h.role === 'auto-assign' ? (h.suggested_role ?? 'worker') : h.role, bootstrap: h.bootstrap, current_stage: ((h.doc as Record<string, unknown>).progress as { current_stage?: string } | undefined)?.current_stage })),
      )
    : undefined;
  return dropUndefined({
    ...d,
    ...(derived ? { progress: { ...((d.progress as object | undefined) ?? {}), ...derived } } : {}),
    // Cluster, or AddHostsCluster once it accepts hosts (allow-add-workers, import).
    kind: (d.kind as string | undefined) ?? 'Cluster',
    id: c.id,
    href: `${BASE_PATH}/v2/clusters/${c.id}`,
    name: c.name,
    openshift_version: c.openshift_version,
    status: c.status,
    status_info: c.status_info,
    status_updated_at: iso(c.status_updated_at),
    image_info: (d.image_info as object | undefined) ?? {},
    disk_encryption: (d.disk_encryption as object | undefined) ?? NO_DISK_ENCRYPTION,
    install_started_at: docTime(d.install_started_at),
    install_completed_at: docTime(d.install_completed_at),
    controller_logs_started_at: docTime(d.controller_logs_started_at),
    controller_logs_collected_at: docTime(d.controller_logs_collected_at),
    pull_secret_set: Boolean(c.pull_secret),
    user_name: c.owner || undefined,
    created_at: iso(c.created_at),
    updated_at: iso(c.updated_at),
    hosts: hosts ? hosts.map(presentHost) : [],
    total_host_count: hosts?.length,
    ready_host_count: hosts?.filter((h) => h.status === 'known').length,
    enabled_host_count: hosts?.length,
  });
}

export function presentInfraEnv(ie: InfraEnvRow) {
  const d = ie.doc as Record<string, unknown>;
  return dropUndefined({
    ...d,
    kind: 'InfraEnv',
    id: ie.id,
    href: `${BASE_PATH}/v2/infra-envs/${ie.id}`,
    name: ie.name,
    type: (d.type as string | undefined) ?? 'full-iso',
    // Stored as the array the caller sent (what image building reads); on the
    // wire it is a JSON string, as in AS: the Python client types it `str`.
    kernel_arguments: Array.isArray(d.kernel_arguments) ? JSON.stringify(d.kernel_arguments) : (d.kernel_arguments as string | undefined),
    cluster_id: ie.cluster_id ?? undefined,
    pull_secret_set: Boolean(ie.pull_secret),
    // Set with download_url (infra-envs-service.ts); AS sends the zero time when its URL does not expire.
    expires_at: docTime(d.expires_at),
    user_name: ie.owner || undefined,
    created_at: iso(ie.created_at)!,
    updated_at: iso(ie.updated_at)!,
  });
}

export function presentEvent(e: EventRow) {
  return dropUndefined({
    name: e.name,
    severity: e.severity,
    category: e.category,
    message: e.message,
    event_time: iso(e.event_time)!,
    cluster_id: e.cluster_id ?? undefined,
    host_id: e.host_id ?? undefined,
    infra_env_id: e.infra_env_id ?? undefined,
    request_id: e.request_id ?? undefined,
    props: e.props ? JSON.stringify(e.props) : undefined,
  });
}

export function presentManifest(m: ManifestRow) {
  return { folder: m.folder, file_name: m.file_name, manifest_source: m.manifest_source };
}
