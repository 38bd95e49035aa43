/**
 * Everything a cluster carries besides its settings: install-config overrides,
 * custom manifests, generated files, credentials, operator and finalizing
 * reports from the installed cluster (logs: logs-service.ts).
 */
import { stringify as toYaml, parseAllDocuments } from 'yaml';
import type { Principal } from '../auth/principal';
import { badRequest, conflict, notFound } from '../errors';
import type { ManifestRow } from '../db/rows';
import type { ServiceContext } from './context';
import { loadCluster } from './access';
import { CLUSTER_EDITABLE } from './clusters-service';
import { componentsAvailable, withBuiltinOperators } from '../domain/lifecycle/components';
import { deliverComponents, keepComponents } from './report-delivery';

type Json = Record<string, unknown>;

/** The role a host is installed with: its own, or the suggestion while auto-assign (AS's effective role). */
const effectiveRole = (h: { role: string; suggested_role: string | null }): string => (h.role === 'auto-assign' && h.suggested_role ? h.suggested_role : h.role);

/**
 * The install-config Landfall derives from the cluster and its hosts (replicas
 * count the hosts by their effective role, as AS does); the pull secret is
 * never part of what is returned.
 */
export function installConfigOf(cluster: { name: string; doc: Json }, hosts: ReadonlyArray<{ role: string; suggested_role: string | null }>): Json {
  const d = cluster.doc;
  const replicas = (role: string) => hosts.filter((h) => effectiveRole(h) === role).length;
  const base: Json = {
    apiVersion: 'v1',
    baseDomain: d.base_dns_domain ?? '',
    metadata: { name: cluster.name },
    networking: {
      networkType: d.network_type ?? 'Cilium',
      clusterNetwork: ((d.cluster_networks as Json[] | undefined) ?? []).map((n) => ({ cidr: n.cidr, hostPrefix: n.host_prefix })),
      serviceNetwork: ((d.service_networks as Json[] | undefined) ?? []).map((n) => n.cidr),
      machineNetwork: ((d.machine_networks as Json[] | undefined) ?? []).map((n) => ({ cidr: n.cidr })),
    },
    controlPlane: { name: 'master', replicas: replicas('master') },
    compute: [{ name: 'worker', replicas: replicas('worker') }],
    platform: { baremetal: { apiVIPs: ((d.api_vips as Json[] | undefined) ?? []).map((v) => v.ip), ingressVIPs: ((d.ingress_vips as Json[] | undefined) ?? []).map((v) => v.ip) } },
    ...(d.ssh_public_key ? { sshKey: d.ssh_public_key } : {}),
  };
  const overrides = d.install_config_overrides ? (JSON.parse(d.install_config_overrides as string) as Json) : {};
  return deepMerge(base, overrides);
}

function deepMerge(a: Json, b: Json): Json {
  const out: Json = { ...a };
  for (const [k, v] of Object.entries(b)) {
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && a[k] && typeof a[k] === 'object' && !Array.isArray(a[k]) ? deepMerge(a[k] as Json, v as Json) : v;
  }
  return out;
}

export async function getInstallConfig(ctx: ServiceContext, p: Principal, id: string): Promise<string> {
  const c = await loadCluster(ctx, p, id);
  return toYaml(installConfigOf(c, await ctx.repos.hosts.list({ clusterId: id })));
}

/** Overrides arrive as a JSON string holding a JSON object (the AS wire format). */
export async function patchInstallConfig(ctx: ServiceContext, p: Principal, id: string, overrides: string, requestId?: string): Promise<void> {
  await loadCluster(ctx, p, id);
  let parsed: unknown;
  try {
    parsed = JSON.parse(overrides);
  } catch {
    throw badRequest('install-config overrides must be a JSON object encoded as a string');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw badRequest('install-config overrides must be a JSON object');
  if ('pullSecret' in (parsed as Json)) throw badRequest('install-config overrides cannot set pullSecret; set the cluster pull_secret instead');
  // The doc is read and written under the row's lock: a copy read before it would undo what another writer set
  // meanwhile (the install workflow's completion, a refresh's validations).
  await ctx.db.transaction(async (trx) => {
    const c = (await ctx.repos.clusters.getForUpdate(id, trx))!;
    if (!(CLUSTER_EDITABLE as readonly string[]).includes(c.status)) throw conflict(`install-config cannot be changed in status ${c.status}`);
    await ctx.repos.clusters.update(id, { doc: { ...c.doc, install_config_overrides: overrides } }, trx);
    await ctx.repos.events.add({ name: 'cluster_install_config_updated', clusterId: id, requestId }, trx);
  });
}

const MANIFEST_NAME = /^[A-Za-z0-9._-]+\.(ya?ml|json)$/;

function checkManifest(fileName: string, content: string): void {
  if (!MANIFEST_NAME.test(fileName)) throw badRequest(`file_name: "${fileName}" must be a plain file name ending in .yaml, .yml or .json`, { field: 'file_name' });
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(content)) throw badRequest('content: must be base64', { field: 'content' });
  const text = Buffer.from(content, 'base64').toString('utf8');
  if (!text.trim()) throw badRequest('content: the manifest is empty', { field: 'content' });
  if (fileName.endsWith('.json')) {
    try {
      JSON.parse(text);
    } catch {
      throw badRequest('content: not valid JSON', { field: 'content' });
    }
  } else {
    const docs = parseAllDocuments(text);
    const bad = (Array.isArray(docs) ? docs : [docs]).find((d) => d.errors.length);
    if (bad) throw badRequest(`content: not valid YAML (${bad.errors[0]!.message.split('\n')[0]})`, { field: 'content' });
  }
}

export async function listManifests(ctx: ServiceContext, p: Principal, id: string): Promise<ManifestRow[]> {
  await loadCluster(ctx, p, id);
  return ctx.repos.manifests.list(id);
}

/** One manifest, to download its content (base64 as stored). */
export async function getManifest(ctx: ServiceContext, p: Principal, id: string, folder: string, fileName: string): Promise<ManifestRow> {
  await loadCluster(ctx, p, id);
  const m = await ctx.repos.manifests.get(id, folder, fileName);
  if (!m) throw notFound(`manifest ${folder}/${fileName}`);
  return m;
}

export async function createManifest(ctx: ServiceContext, p: Principal, id: string, body: { folder?: string; file_name: string; content: string }, requestId?: string) {
  const c = await loadCluster(ctx, p, id);
  if (!(CLUSTER_EDITABLE as readonly string[]).includes(c.status)) throw conflict(`manifests cannot be changed in status ${c.status}`);
  checkManifest(body.file_name, body.content);
  return ctx.db.transaction(async (trx) => {
    const row = await ctx.repos.manifests.upsert({ cluster_id: id, folder: body.folder ?? 'manifests', file_name: body.file_name, content: body.content }, trx);
    await ctx.repos.events.add({ name: 'cluster_manifest_created', clusterId: id, props: { folder: row.folder, file_name: row.file_name }, requestId }, trx);
    return row;
  });
}

export async function updateManifest(ctx: ServiceContext, p: Principal, id: string, body: { folder: string; file_name: string; updated_folder?: string; updated_file_name?: string; updated_content?: string }) {
  const c = await loadCluster(ctx, p, id);
  if (!(CLUSTER_EDITABLE as readonly string[]).includes(c.status)) throw conflict(`manifests cannot be changed in status ${c.status}`);
  return ctx.db.transaction(async (trx) => {
    const existing = await ctx.repos.manifests.get(id, body.folder, body.file_name, trx);
    if (!existing) throw notFound(`manifest ${body.folder}/${body.file_name}`);
    const folder = body.updated_folder ?? existing.folder;
    const fileName = body.updated_file_name ?? existing.file_name;
    const content = body.updated_content ?? existing.content;
    checkManifest(fileName, content);
    await ctx.repos.manifests.delete(id, existing.folder, existing.file_name, trx);
    return ctx.repos.manifests.upsert({ cluster_id: id, folder, file_name: fileName, content }, trx);
  });
}

export async function deleteManifest(ctx: ServiceContext, p: Principal, id: string, folder: string, fileName: string, requestId?: string): Promise<void> {
  const c = await loadCluster(ctx, p, id);
  if (!(CLUSTER_EDITABLE as readonly string[]).includes(c.status)) throw conflict(`manifests cannot be changed in status ${c.status}`);
  await ctx.db.transaction(async (trx) => {
    if (!(await ctx.repos.manifests.delete(id, folder, fileName, trx))) throw notFound(`manifest ${folder}/${fileName}`);
    await ctx.repos.events.add({ name: 'cluster_manifest_deleted', clusterId: id, props: { folder, file_name: fileName }, requestId }, trx);
  });
}

const KUBECONFIG_STATES = ['finalizing', 'installed', 'error', 'adding-hosts', 'cancelled', 'installing-pending-user-action'];
const EARLY_CREDENTIAL_STATES = ['installing', ...KUBECONFIG_STATES];

/** kubeconfig from finalizing on; the other two from installing (reference §1a). */
export async function downloadCredentials(ctx: ServiceContext, p: Principal, id: string, fileName: string): Promise<Buffer> {
  const c = await loadCluster(ctx, p, id);
  const allowed = fileName === 'kubeconfig' ? KUBECONFIG_STATES : EARLY_CREDENTIAL_STATES;
  if (!allowed.includes(c.status)) throw conflict(`${fileName} is not available while the cluster is ${c.status}`);
  const key = `clusters/${id}/credentials/${fileName}`;
  if (!(await ctx.store.stat(key))) throw conflict(`${fileName} has not been generated for this cluster`);
  return ctx.store.getBuffer(key);
}

export async function getCredentials(ctx: ServiceContext, p: Principal, id: string) {
  const c = await loadCluster(ctx, p, id);
  if (!KUBECONFIG_STATES.includes(c.status)) throw conflict(`credentials are not available while the cluster is ${c.status}`);
  const key = `clusters/${id}/credentials/kubeadmin-password`;
  if (!(await ctx.store.stat(key))) throw conflict('credentials have not been generated for this cluster');
  const password = (await ctx.store.getBuffer(key)).toString('utf8').trim();
  const base = c.doc.base_dns_domain as string | undefined;
  return { username: 'kubeadmin', password, ...(base ? { console_url: `https://api.${c.name}.${base}:6443` } : {}) };
}

const GENERATED_FILES = ['bootstrap.ign', 'master.ign', 'arbiter.ign', 'worker.ign', 'metadata.json'];

/** A cluster file's bytes; the API sends every one as application/octet-stream, as assisted-service does. */
export async function downloadClusterFile(ctx: ServiceContext, p: Principal, id: string, fileName: string): Promise<Buffer> {
  const c = await loadCluster(ctx, p, id);
  if (fileName === 'install-config.yaml') return Buffer.from(toYaml(installConfigOf(c, await ctx.repos.hosts.list({ clusterId: id }))));
  if (fileName === 'custom_manifests.json' || fileName === 'custom_manifests.yaml') {
    const list = (await ctx.repos.manifests.list(id)).map((m) => ({ folder: m.folder, file_name: m.file_name, content: Buffer.from(m.content, 'base64').toString('utf8') }));
    return Buffer.from(fileName.endsWith('.json') ? JSON.stringify(list) : toYaml(list));
  }
  if (!GENERATED_FILES.includes(fileName)) throw badRequest(`file_name: unknown file "${fileName}"`, { field: 'file_name' });
  if (c.install_attempt === 0) throw conflict(`${fileName} is generated when the installation starts; the cluster is ${c.status}`);
  const key = `clusters/${id}/${fileName.endsWith('.ign') ? 'ignition/' : ''}${fileName}`;
  if (!(await ctx.store.stat(key))) throw conflict(`${fileName} has not been generated yet`);
  return ctx.store.getBuffer(key);
}

export async function updateFinalizingProgress(ctx: ServiceContext, p: Principal, id: string, stage: string): Promise<void> {
  await loadCluster(ctx, p, id);
  // Under the row's lock: the controller reports its last finalizing stage while the workflow completes the
  // install, and a copy read before the completion wrote it back without install_completed_at (aicli's
  // `wait cluster` then waited forever on an installed cluster).
  await ctx.db.transaction(async (trx) => {
    const c = (await ctx.repos.clusters.getForUpdate(id, trx))!;
    if (c.status !== 'finalizing') throw conflict(`finalizing progress is accepted only while the cluster is finalizing (it is ${c.status})`);
    const progress = { ...((c.doc.progress as Json | undefined) ?? {}), finalizing_stage: stage, finalizing_stage_started_at: ctx.now().toISOString() };
    await ctx.repos.clusters.update(id, { doc: { ...c.doc, progress } }, trx);
  });
}

export async function listMonitoredOperators(ctx: ServiceContext, p: Principal, id: string, name?: string): Promise<Json[]> {
  const c = await loadCluster(ctx, p, id);
  const ops = withBuiltinOperators(id, (c.doc.monitored_operators as Json[] | undefined) ?? []);
  return name ? ops.filter((o) => o.name === name) : ops;
}

export async function reportOperator(ctx: ServiceContext, p: Principal, id: string, report: { name: string; version?: string; status?: string; status_info?: string }, requestId?: string): Promise<void> {
  // Access is checked before the transaction: a query on another connection inside it could starve the pool.
  await loadCluster(ctx, p, id);
  const available = await ctx.db.transaction(async (trx) => {
    const c = (await ctx.repos.clusters.getForUpdate(id, trx))!;
    const all = withBuiltinOperators(id, (c.doc.monitored_operators as Json[] | undefined) ?? []);
    const before = all.find((o) => o.name === report.name);
    const status = report.status ?? 'progressing';
    // The entry keeps its place and what the service set (type, timeout); the report sets the rest.
    const entry = { cluster_id: id, operator_type: 'builtin', ...before, name: report.name, version: report.version ?? '', status, status_info: report.status_info ?? '', status_updated_at: ctx.now().toISOString() };
    const ops = before ? all.map((o) => (o === before ? entry : o)) : [...all, entry];
    await ctx.repos.clusters.update(id, { doc: { ...c.doc, monitored_operators: ops } }, trx);
    // The controller reports every few seconds; an event only when the status changes keeps the event list readable.
    if (before?.status !== status) await ctx.repos.events.add({ name: 'cluster_operator_report', clusterId: id, props: { operator_name: report.name, operator_status: status }, requestId }, trx);
    // Kept with the change and then signalled (report-delivery.ts): a signal that fails is sent by the next report or the monitor's sweep.
    if (c.status === 'finalizing' && componentsAvailable(ops)) return keepComponents(trx, c, { available: true });
    return Boolean(c.components_pending);
  });
  if (available) await deliverComponents(ctx, id);
}

export async function uploadIngressCert(ctx: ServiceContext, p: Principal, id: string, pem: string): Promise<void> {
  await loadCluster(ctx, p, id);
  if (!/-----BEGIN CERTIFICATE-----[\s\S]+-----END CERTIFICATE-----/.test(pem)) throw badRequest('the ingress certificate must be a PEM certificate');
  await ctx.store.put(`clusters/${id}/ingress-ca.crt`, pem, 'application/x-pem-file');
}

/**
 * The controller's verdict at the end of finalizing (what assisted-installer-controller sends once
 * its monitored operators are done): success completes the install, failure fails it with its error.
 */
export async function completeInstallation(ctx: ServiceContext, p: Principal, id: string, body: { is_success: boolean; error_info?: string }, requestId?: string) {
  const c = await loadCluster(ctx, p, id);
  await ctx.repos.events.add({ name: 'cluster_completion_reported', clusterId: id, severity: body.is_success ? 'info' : 'error', props: { is_success: body.is_success, error_info: body.error_info ?? '' }, requestId });
  // assisted-service's rule: the controller's verdict ends finalizing, success or not; the workflow writes the status.
  if (c.status === 'finalizing') {
    const verdict = { available: body.is_success, ...(body.is_success ? {} : { detail: body.error_info || 'no error given' }) };
    if (await ctx.db.transaction((trx) => keepComponents(trx, c, verdict))) await deliverComponents(ctx, id);
  }
  return c;
}
