/**
 * BMC use-cases behind the REST API (a Landfall extension, see openapi.yaml
 * tag `bmc`): give a registered host its BMC, enrol a machine that has not
 * booted yet by its BMC, and attach an enrolment to the host whose agent
 * registers from it. The API never calls a BMC itself: power and media run
 * as Temporal activities (activities/bmc.ts), so a slow or dead BMC holds no
 * request and every call is retried and recorded.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Principal } from '../auth/principal';
import { AppError, badRequest, conflict, notFound } from '../errors';
import type { ServiceContext } from '../services/context';
import { loadHost, loadInfraEnv } from '../services/access';
import { hostDisplayName } from '../api/assisted/presenters';
import type { HostRow } from '../db/rows';
import { TASK_QUEUE, workflowIds } from '../temporal/names';
import { BmcAddressError, normaliseMac, parseBmcAddress, type BmcAddress } from './address';
import type { BmcCredentials } from './driver';
import { simulatedSuffix, type BmcRow } from './bmc-repo';
import type { BmcPorts } from './ports';

const BASE_PATH = '/api/assisted-install';

export interface BmcInput {
  address: BmcAddress;
  credentials: BmcCredentials;
  bootMac?: string;
  insecure: boolean;
}

/** The request body, checked field by field; every refusal is a 400 naming the field. */
export function parseBmcInput(body: unknown): BmcInput {
  const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  if (typeof b.bmc_address !== 'string' || !b.bmc_address.trim()) throw badRequest('bmc_address is required', { field: 'bmc_address' });
  let address: BmcAddress;
  try {
    address = parseBmcAddress(b.bmc_address);
  } catch (err) {
    if (err instanceof BmcAddressError) throw badRequest(err.message, { field: 'bmc_address' });
    throw err;
  }
  const c = b.bmc_credentials as Record<string, unknown> | undefined;
  if (!c || typeof c !== 'object') throw badRequest('bmc_credentials {username, password} is required', { field: 'bmc_credentials' });
  if (typeof c.username !== 'string' || !c.username) throw badRequest('bmc_credentials.username is required', { field: 'bmc_credentials.username' });
  if (typeof c.password !== 'string' || !c.password) throw badRequest('bmc_credentials.password is required', { field: 'bmc_credentials.password' });
  if (/[:\r\n]/.test(c.username)) throw badRequest('bmc_credentials.username must not contain ":" or line breaks (HTTP Basic)', { field: 'bmc_credentials.username' });
  let bootMac: string | undefined;
  if (b.boot_mac_address !== undefined && b.boot_mac_address !== null && b.boot_mac_address !== '') {
    if (typeof b.boot_mac_address !== 'string') throw badRequest('boot_mac_address must be a string', { field: 'boot_mac_address' });
    try {
      bootMac = normaliseMac(b.boot_mac_address);
    } catch (err) {
      throw badRequest((err as Error).message, { field: 'boot_mac_address' });
    }
  }
  return { address, credentials: { username: c.username, password: c.password }, bootMac, insecure: b.disable_certificate_verification === true };
}

function ports(ctx: ServiceContext): BmcPorts {
  if (!ctx.bmc) throw new AppError('dependency_unavailable', 'BMC support is not configured in this process');
  return ctx.bmc;
}

/** What leaves the service: never the credentials, only that they are set. */
export function presentBmc(r: BmcRow) {
  return {
    kind: 'BmcHost' as const,
    id: r.id,
    href: `${BASE_PATH}/v2/infra-envs/${r.infra_env_id}/bmc-hosts/${r.id}`,
    infra_env_id: r.infra_env_id,
    ...(r.host_id ? { host_id: r.host_id } : {}),
    bmc_address: r.address,
    bmc_credentials_set: true,
    simulated: r.address.startsWith('simulated://'),
    ...(r.boot_mac_address ? { boot_mac_address: r.boot_mac_address } : {}),
    disable_certificate_verification: r.disable_certificate_verification,
    ...(r.system_uuid ? { system_uuid: r.system_uuid } : {}),
    status: r.status,
    status_info: r.status_info,
    status_updated_at: new Date(r.status_updated_at).toISOString(),
    ...(r.last_action ? { last_action: r.last_action } : {}),
    created_at: new Date(r.created_at).toISOString(),
    updated_at: new Date(r.updated_at).toISOString(),
  };
}


/** The host's view of its BMC, kept in its document so every host response shows it (never the credentials). */
async function projectOnHost(ctx: ServiceContext, trx: Knex.Transaction, h: HostRow, r: BmcRow | undefined): Promise<void> {
  const doc = { ...(h.doc as Record<string, unknown>) };
  delete doc.bmc_address;
  delete doc.bmc_credentials_set;
  delete doc.boot_mac_address;
  if (r) Object.assign(doc, { bmc_address: r.address, bmc_credentials_set: true, ...(r.boot_mac_address ? { boot_mac_address: r.boot_mac_address } : {}) });
  await ctx.repos.hosts.update({ infraEnvId: h.infra_env_id, hostId: h.id }, { doc }, trx);
}

const uniqueViolation = (err: unknown) => (err as { code?: string }).code === '23505';

export async function setHostBmc(ctx: ServiceContext, p: Principal, infraEnvId: string, hostId: string, body: unknown): Promise<BmcRow> {
  const input = parseBmcInput(body);
  await loadHost(ctx, p, infraEnvId, hostId);
  const bmc = ports(ctx);
  const box = await bmc.box();
  try {
    return await ctx.db.transaction(async (trx) => {
      const host = (await ctx.repos.hosts.getForUpdate({ infraEnvId, hostId }, trx))!;
      const existing = await bmc.repo.forHost(infraEnvId, hostId, trx);
      const id = existing?.id ?? randomUUID();
      const fields = { address: input.address.address, credentials_sealed: box.seal(input.credentials, id), boot_mac_address: input.bootMac ?? null, disable_certificate_verification: input.insecure };
      const row = existing
        ? await bmc.repo.update(id, fields, trx)
        : await bmc.repo.insert({ id, infra_env_id: infraEnvId, host_id: hostId, system_uuid: null, status: 'attached', status_info: 'Given by the user for this host', ...fields }, trx);
      await projectOnHost(ctx, trx, host, row);
      await ctx.repos.events.add({ name: 'host_bmc_set', infraEnvId, hostId, clusterId: host.cluster_id, props: { host_name: hostDisplayName(host), bmc_address: row.address, simulated: simulatedSuffix(row.address) } }, trx);
      return row;
    });
  } catch (err) {
    if (uniqueViolation(err)) throw conflict(`boot MAC address ${input.bootMac} already belongs to another BMC of infra-env ${infraEnvId}`, { field: 'boot_mac_address' });
    throw err;
  }
}

export async function getHostBmc(ctx: ServiceContext, p: Principal, infraEnvId: string, hostId: string): Promise<BmcRow> {
  await loadHost(ctx, p, infraEnvId, hostId);
  const row = await ports(ctx).repo.forHost(infraEnvId, hostId);
  if (!row) throw notFound(`BMC of host ${hostId}`);
  return row;
}

export async function deleteHostBmc(ctx: ServiceContext, p: Principal, infraEnvId: string, hostId: string): Promise<void> {
  const row = await getHostBmc(ctx, p, infraEnvId, hostId);
  await ctx.db.transaction(async (trx) => {
    const host = await ctx.repos.hosts.getForUpdate({ infraEnvId, hostId }, trx);
    await ports(ctx).repo.delete(row.id, trx);
    if (host) {
      await projectOnHost(ctx, trx, host, undefined);
      await ctx.repos.events.add({ name: 'host_bmc_removed', infraEnvId, hostId, clusterId: host.cluster_id, props: { host_name: hostDisplayName(host), bmc_address: row.address } }, trx);
    }
  });
}

/** Enrols a machine by its BMC and starts powering it on from the infra-env's ISO (202: the BMC is driven by a workflow). */
export async function enrollBmcHost(ctx: ServiceContext, p: Principal, infraEnvId: string, body: unknown): Promise<BmcRow> {
  const input = parseBmcInput(body);
  const ie = await loadInfraEnv(ctx, p, infraEnvId);
  const doc = ie.doc as Record<string, unknown>;
  if (!ctx.baseImages.has(doc.openshift_version as string | undefined, (doc.cpu_architecture as string | undefined) ?? 'x86_64')) {
    throw conflict(`infra-env ${infraEnvId} has no discovery image to boot: no base image is configured for its release and architecture`);
  }
  const bmc = ports(ctx);
  const box = await bmc.box();
  const id = randomUUID();
  let row: BmcRow;
  try {
    row = await ctx.db.transaction(async (trx) => {
      const r = await bmc.repo.insert(
        { id, infra_env_id: infraEnvId, host_id: null, system_uuid: null, address: input.address.address, credentials_sealed: box.seal(input.credentials, id), boot_mac_address: input.bootMac ?? null, disable_certificate_verification: input.insecure, status: 'enrolling', status_info: 'Inserting the discovery ISO and powering the machine on' },
        trx,
      );
      await ctx.repos.events.add({ name: 'bmc_host_enrolled', infraEnvId, clusterId: ie.cluster_id, props: { bmc_address: r.address, simulated: simulatedSuffix(r.address) } }, trx);
      return r;
    });
  } catch (err) {
    if (uniqueViolation(err)) throw conflict(`boot MAC address ${input.bootMac} is already enrolled in infra-env ${infraEnvId}`, { field: 'boot_mac_address' });
    throw err;
  }
  await ctx.temporal.workflow.start('enrollBmcHostWorkflow', { workflowId: workflowIds.enrollBmcHost(id), taskQueue: TASK_QUEUE.install, args: [{ bmcId: id }] });
  return row;
}

export async function listBmcHosts(ctx: ServiceContext, p: Principal, infraEnvId: string): Promise<BmcRow[]> {
  await loadInfraEnv(ctx, p, infraEnvId);
  return ports(ctx).repo.list(infraEnvId);
}

export async function getBmcHost(ctx: ServiceContext, p: Principal, infraEnvId: string, id: string): Promise<BmcRow> {
  await loadInfraEnv(ctx, p, infraEnvId);
  const row = await ports(ctx).repo.get(id);
  if (!row || row.infra_env_id !== infraEnvId) throw notFound(`BMC host ${id}`);
  return row;
}

/** Forgets an enrolment (Landfall stops driving that BMC); the machine's power is left as it is. */
export async function deleteBmcHost(ctx: ServiceContext, p: Principal, infraEnvId: string, id: string): Promise<void> {
  const row = await getBmcHost(ctx, p, infraEnvId, id);
  await ctx.db.transaction(async (trx) => {
    const host = row.host_id ? await ctx.repos.hosts.getForUpdate({ infraEnvId, hostId: row.host_id }, trx) : undefined;
    await ports(ctx).repo.delete(row.id, trx);
    if (host) await projectOnHost(ctx, trx, host, undefined);
  });
}

/**
 * Called in the registration and inventory transactions of a host: an
 * enrolment of this infra-env whose system UUID is the host's id (agents
 * register with the SMBIOS UUID, which Redfish reports as the System's UUID)
 * or whose boot MAC is one of the host's NICs now belongs to this host.
 */
/** Whether it wrote the host row (a BMC's projection). */
export async function attachEnrolledBmc(ctx: ServiceContext, trx: Knex.Transaction, infraEnvId: string, hostId: string, macs: string[] = []): Promise<boolean> {
  if (!ctx.bmc) return false;
  const bmc = ctx.bmc;
  // Most infra-envs enrol no machine by its BMC: one indexed look, not three, on every registration and inventory.
  if (!(await bmc.repo.anyIn(infraEnvId, trx))) return false;
  const host = await ctx.repos.hosts.get({ infraEnvId, hostId }, trx);
  if (!host) return false;
  const carried = await bmc.repo.forHost(infraEnvId, hostId, trx);
  if (carried) {
    // A host registering again (deleted and back, or reset) gets its BMC's projection back.
    if ((host.doc as Record<string, unknown>).bmc_address === carried.address) return false;
    await projectOnHost(ctx, trx, host, carried);
    return true;
  }
  const candidates = await bmc.repo.unmatched(infraEnvId, hostId, macs.map((m) => m.toLowerCase()), trx);
  const match = candidates.find((c) => c.system_uuid === hostId.toLowerCase()) ?? candidates[0];
  if (!match) return false;
  const by = match.system_uuid === hostId.toLowerCase() ? 'system-uuid' : 'boot-mac';
  const moved = await bmc.repo.applyEvent(trx, match.id, { type: 'HostMatched', hostId, by }, ctx.repos.events, { host_id: hostId });
  if (!moved) return false;
  await projectOnHost(ctx, trx, host, moved);
  await ctx.repos.events.add({ name: 'host_bmc_set', infraEnvId, hostId, clusterId: host.cluster_id, props: { host_name: hostDisplayName(host), bmc_address: moved.address, simulated: simulatedSuffix(moved.address) } }, trx);
  return true;
}

/** MAC addresses of a normalised inventory document (a string, as stored). */
export function inventoryMacs(inventory: string | null | undefined): string[] {
  if (!inventory) return [];
  try {
    const inv = JSON.parse(inventory) as { interfaces?: Array<{ mac_address?: string }> };
    return (inv.interfaces ?? []).map((i) => (i.mac_address ?? '').toLowerCase()).filter(Boolean);
  } catch {
    return [];
  }
}
