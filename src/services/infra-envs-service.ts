import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal';
import { ownerOf } from '../auth/principal';
import { badRequest, conflict } from '../errors';
import { pullSecretProblem, sshKeyProblem } from '../domain/input-rules';
import { resolveRelease } from '../domain/releases';
import type { InfraEnvRow } from '../db/rows';
import { discoveryIgnition } from '../domain/discovery-ignition';
import { applyKernelArguments, checkKernelArguments, type KernelArgument } from '../domain/kernel-arguments';
import { StaticNetworkError, staticNetworkKeyfiles, type HostStaticNetwork } from '../domain/static-network';
import type { ServiceContext } from './context';
import { loadCluster, loadInfraEnv, ownerFilter } from './access';

type Json = Record<string, unknown>;

const PASSTHROUGH = ['cpu_architecture', 'proxy', 'additional_ntp_sources', 'kernel_arguments', 'additional_trust_bundle'] as const;

function checked(field: string, problem: string | undefined) {
  if (problem) throw badRequest(`${field}: ${problem}`, { field });
}

/** Ignition overrides must at least be a JSON object naming an Ignition 3.x version. */
function ignitionOverrideProblem(v: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch {
    return 'must be JSON';
  }
  const version = (parsed as { ignition?: { version?: unknown } })?.ignition?.version;
  if (typeof version !== 'string' || !/^3\.\d+\.\d+$/.test(version)) return 'must be an Ignition config with ignition.version 3.x.y';
  return undefined;
}

async function normalize(ctx: ServiceContext, p: Principal, body: Json, existing: Json, creating: boolean) {
  const doc: Json = { ...existing };
  const out: { name?: string; pull_secret?: string; cluster_id?: string | null; doc: Json } = { doc };
  const has = (k: string) => body[k] !== undefined && body[k] !== null;
  if (has('name')) out.name = body.name as string;
  if (has('pull_secret')) {
    checked('pull_secret', pullSecretProblem(body.pull_secret as string));
    out.pull_secret = body.pull_secret as string;
  }
  if (has('ssh_authorized_key')) {
    if (body.ssh_authorized_key !== '') checked('ssh_authorized_key', sshKeyProblem(body.ssh_authorized_key as string));
    doc.ssh_authorized_key = body.ssh_authorized_key;
  }
  if (has('ignition_config_override')) {
    if (body.ignition_config_override !== '') checked('ignition_config_override', ignitionOverrideProblem(body.ignition_config_override as string));
    doc.ignition_config_override = body.ignition_config_override;
  }
  if (has('image_type')) doc.type = body.image_type;
  else if (creating) doc.type = 'full-iso';
  if (has('openshift_version')) {
    const r = resolveRelease(ctx.releases, body.openshift_version as string);
    if (!r) throw badRequest(`openshift_version: "${body.openshift_version}" is not a release Landfall installs`, { field: 'openshift_version' });
    doc.openshift_version = r;
  }
  if (has('static_network_config')) {
    // Checked now, so a bad configuration is a 400 here rather than a broken discovery image later.
    try {
      staticNetworkKeyfiles(body.static_network_config as HostStaticNetwork[]);
    } catch (err) {
      if (err instanceof StaticNetworkError) throw badRequest(`static_network_config: ${err.message}`, { field: 'static_network_config' });
      throw err;
    }
    doc.static_network_config = JSON.stringify(body.static_network_config);
  }
  if (has('kernel_arguments')) checkKernelArguments(body.kernel_arguments as KernelArgument[]);
  // null means "not given", as for assisted-service: stored, it would be a null the response schema refuses on every later GET.
  for (const k of PASSTHROUGH) if (has(k)) doc[k] = body[k];
  if (creating && has('cluster_id')) {
    // Binding to a cluster the caller cannot see looks exactly like binding to one that does not exist.
    const cluster = await loadCluster(ctx, p, body.cluster_id as string);
    out.cluster_id = cluster.id;
    doc.openshift_version ??= cluster.openshift_version;
  }
  if (creating) {
    doc.cpu_architecture ??= 'x86_64';
    doc.openshift_version ??= Object.entries(ctx.releases).find(([, r]) => r.default)?.[0] ?? Object.keys(ctx.releases)[0];
  }
  return out;
}

export async function createInfraEnv(ctx: ServiceContext, p: Principal, body: Json, requestId?: string): Promise<InfraEnvRow> {
  const f = await normalize(ctx, p, body, {}, true);
  const id = randomUUID();
  Object.assign(f.doc, await downloadUrlFields(ctx, id, f.doc));
  return ctx.db.transaction(async (trx) => {
    const row = await ctx.repos.infraEnvs.insert({ id, owner: ownerOf(p), name: f.name!, cluster_id: f.cluster_id ?? null, pull_secret: f.pull_secret ?? null, doc: f.doc }, trx);
    await ctx.repos.events.add({ name: 'infra_env_registered', infraEnvId: id, clusterId: row.cluster_id, props: { infra_env_name: row.name }, requestId }, trx);
    return row;
  });
}

export async function listInfraEnvs(ctx: ServiceContext, p: Principal, clusterId?: string): Promise<InfraEnvRow[]> {
  const rows = await ctx.repos.infraEnvs.list({ ...ownerFilter(p), ...(clusterId ? { clusterId } : {}) });
  return Promise.all(rows.map((ie) => withFreshDownloadUrl(ctx, ie)));
}

export async function getInfraEnv(ctx: ServiceContext, p: Principal, id: string): Promise<InfraEnvRow> {
  return withFreshDownloadUrl(ctx, await loadInfraEnv(ctx, p, id));
}

export async function updateInfraEnv(ctx: ServiceContext, p: Principal, id: string, body: Json, requestId?: string): Promise<InfraEnvRow> {
  const current = await loadInfraEnv(ctx, p, id);
  const f = await normalize(ctx, p, body, current.doc, false);
  // A changed infra-env retires the image URLs handed out before (their tokens carry the old
  // version); download_url becomes one for the new image, as AS makes a new one on update.
  f.doc.image_version = Number((current.doc as Record<string, unknown>).image_version ?? 0) + 1;
  delete f.doc.download_url;
  delete f.doc.expires_at;
  Object.assign(f.doc, await downloadUrlFields(ctx, id, f.doc));
  return ctx.db.transaction(async (trx) => {
    // The new doc was built from a copy read without a lock (building it may read on other connections): an
    // update that landed meanwhile moved the image version, and this one would undo it without a word.
    const locked = await trx('infra_envs').where({ id }).forUpdate().first('doc');
    if (Number((locked?.doc as Record<string, unknown> | undefined)?.image_version ?? 0) !== Number(f.doc.image_version) - 1) throw conflict(`infra-env ${id} was updated by another request meanwhile; read it again and retry`);
    const row = await ctx.repos.infraEnvs.update(id, { ...(f.name ? { name: f.name } : {}), ...(f.pull_secret ? { pull_secret: f.pull_secret } : {}), doc: f.doc }, trx);
    await ctx.repos.events.add({ name: 'infra_env_updated', infraEnvId: id, clusterId: row.cluster_id, props: { infra_env_name: row.name }, requestId }, trx);
    return row;
  });
}

export async function deleteInfraEnv(ctx: ServiceContext, p: Principal, id: string, requestId?: string): Promise<void> {
  const ie = await loadInfraEnv(ctx, p, id);
  await ctx.db.transaction(async (trx) => {
    const hosts = await ctx.repos.hosts.list({ infraEnvId: id }, trx);
    if (hosts.length) throw conflict(`infra-env ${id} still has ${hosts.length} host(s); delete them first`);
    await ctx.repos.infraEnvs.delete(id, trx);
    await ctx.repos.events.add({ name: 'infra_env_deregistered', infraEnvId: id, clusterId: ie.cluster_id, props: { infra_env_name: ie.name }, requestId }, trx);
  });
}

/**
 * A short presigned URL for the discovery image (see src/auth/image-url-signer.ts):
 * it expires, and a later change to the infra-env retires it. Recorded as `download_url`.
 */
export async function imageUrl(ctx: ServiceContext, p: Principal, id: string): Promise<{ url: string; expires_at: string }> {
  const ie = await loadInfraEnv(ctx, p, id);
  const { url, expiresAt } = await signImageUrl(ctx, id, ie.doc);
  await ctx.repos.infraEnvs.setDownloadUrl(id, imageVersionOf(ie.doc), url, expiresAt.toISOString());
  return { url, expires_at: expiresAt.toISOString() };
}

const imageVersionOf = (doc: Record<string, unknown>): number => Number(doc.image_version ?? 0);

/** Whether Landfall can serve the infra-env's discovery image: a base image is configured for its release and architecture. */
function hasImage(ctx: ServiceContext, doc: Record<string, unknown>): boolean {
  return ctx.baseImages.has(doc.openshift_version as string | undefined, (doc.cpu_architecture as string | undefined) ?? 'x86_64');
}

/** download_url and expires_at for a document about to be written (nothing when there is no image to download). */
async function downloadUrlFields(ctx: ServiceContext, id: string, doc: Record<string, unknown>): Promise<{ download_url?: string; expires_at?: string }> {
  if (!hasImage(ctx, doc)) return {};
  const { url, expiresAt } = await signImageUrl(ctx, id, doc);
  return { download_url: url, expires_at: expiresAt.toISOString() };
}

/**
 * The infra-env with a download_url that works, as AS shows one on every read
 * (aicli's `info iso` and `download iso` read nothing else). AS's URL never
 * expires with authentication off; Landfall's always do, so one with less than
 * half its lifetime left is replaced on read: a URL read is good for at least
 * IMAGE_URL_TTL_SECONDS / 2.
 */
async function withFreshDownloadUrl(ctx: ServiceContext, ie: InfraEnvRow): Promise<InfraEnvRow> {
  const d = ie.doc as Record<string, unknown>;
  if (!hasImage(ctx, d)) return ie;
  const expiresAt = typeof d.expires_at === 'string' ? Date.parse(d.expires_at) : NaN;
  if (typeof d.download_url === 'string' && expiresAt - ctx.now().getTime() > (ctx.imageUrlTtlSeconds * 1000) / 2) return ie;
  const signed = await signImageUrl(ctx, ie.id, d);
  const row = await ctx.repos.infraEnvs.setDownloadUrl(ie.id, imageVersionOf(d), signed.url, signed.expiresAt.toISOString());
  // undefined: an update changed the image meanwhile and recorded a URL for it.
  return row ?? (await ctx.repos.infraEnvs.get(ie.id)) ?? ie;
}

async function signImageUrl(ctx: ServiceContext, id: string, doc: Record<string, unknown>): Promise<{ url: string; expiresAt: Date }> {
  const type = ((doc.type as string | undefined) ?? 'full-iso').replace('-iso', '');
  const { token, expiresAt } = await signImageToken(ctx, id, doc);
  return { url: `${ctx.baseUrl}/images/${id}/${type}.iso?image_token=${token}`, expiresAt };
}

async function signImageToken(ctx: ServiceContext, id: string, doc: Record<string, unknown>): Promise<{ token: string; expiresAt: Date }> {
  const expiresAt = Math.floor(ctx.now().getTime() / 1000) + ctx.imageUrlTtlSeconds;
  const token = (await ctx.imageUrlSigner()).sign({ infraEnvId: id, version: imageVersionOf(doc), expiresAt });
  return { token, expiresAt: new Date(expiresAt * 1000) };
}

/**
 * The agent token the discovery image carries, kept in PostgreSQL and reused
 * while it has more than half its life left (the agents' own renewal rule),
 * then replaced. Every API process, and every download, then embeds the same
 * bytes: an ECDSA signature differs at each signing, and a download resumed
 * by Range on another replica must get the same image.
 */
async function discoveryAgentToken(ctx: ServiceContext, id: string): Promise<string> {
  const signer = ctx.signer!;
  const ttl = ctx.agentTokenTtlSeconds || undefined;
  const fresh = (token: string) => {
    try {
      const c = signer.verify(token, ctx.now().getTime());
      return ttl ? c.exp !== undefined && c.exp * 1000 - ctx.now().getTime() > (ttl * 1000) / 2 : c.exp === undefined;
    } catch {
      return false;
    }
  };
  return ctx.repos.infraEnvs.discoveryAgentToken(id, () => signer.sign({ use: 'agent', infra_env_id: id }, ttl, ctx.now().getTime()), fresh);
}

/**
 * discovery.ign for this infra-env. With AUTH_TYPE=local it embeds the
 * infra-env's agent token (the same token the ISO carries).
 */
export async function discoveryIgnitionFor(ctx: ServiceContext, p: Principal, id: string): Promise<string> {
  const ie = await loadInfraEnv(ctx, p, id);
  const d = ie.doc as Record<string, unknown>;
  const config = discoveryIgnition({
    serviceBaseUrl: ctx.baseUrl,
    infraEnvId: id,
    agentToken: ctx.signer ? await discoveryAgentToken(ctx, id) : '',
    sshAuthorizedKey: (d.ssh_authorized_key as string | undefined) || undefined,
    proxy: d.proxy as { http_proxy?: string; https_proxy?: string; no_proxy?: string } | undefined,
    additionalNtpSources: d.additional_ntp_sources as string | undefined,
    additionalTrustBundle: (d.additional_trust_bundle as string | undefined) || undefined,
    ignitionConfigOverride: (d.ignition_config_override as string | undefined) || undefined,
    networkKeyfiles: d.static_network_config ? staticNetworkKeyfiles(JSON.parse(d.static_network_config as string) as HostStaticNetwork[]) : undefined,
  });
  return JSON.stringify(config);
}

/** The release and architecture whose base image an infra-env's discovery image is made from. */
export function baseImageOf(ie: InfraEnvRow): { release: string; arch: string } {
  const d = ie.doc as Record<string, unknown>;
  return { release: d.openshift_version as string, arch: (d.cpu_architecture as string | undefined) ?? 'x86_64' };
}

/** A live-system file (rootfs.img, vmlinuz, initrd.img) of the infra-env's base image; these URLs need no token. */
export function bootArtifactUrl(ctx: ServiceContext, ie: InfraEnvRow, file: string): string {
  const { release, arch } = baseImageOf(ie);
  return `${ctx.baseUrl}/images/boot-artifacts/${release}/${arch}/${file}`;
}

/**
 * The iPXE script that network-boots the discovery image: kernel, initrd and
 * rootfs from the release's base image (boot artifacts need no token), the
 * discovery Ignition from this service by a URL presigned like the ISO's, and
 * the infra-env's kernel arguments applied to the live system's own.
 */
export async function ipxeScript(ctx: ServiceContext, p: Principal, id: string): Promise<string> {
  const ie = await loadInfraEnv(ctx, p, id);
  const { token } = await signImageToken(ctx, id, ie.doc);
  const boot = (file: string) => bootArtifactUrl(ctx, ie, file);
  const ignitionUrl = `${ctx.baseUrl}/images/${id}/discovery.ign?image_token=${token}`;
  const base = `coreos.live.rootfs_url=${boot('rootfs.img')} ignition.firstboot ignition.platform.id=metal ignition.config.url=${ignitionUrl}`;
  return [
    '#!ipxe',
    `initrd --name initrd ${boot('initrd.img')}`,
    `kernel ${boot('vmlinuz')} initrd=initrd ${applyKernelArguments(base, ie.doc.kernel_arguments as KernelArgument[] | undefined)}`,
    'boot',
    '',
  ].join('\n');
}
