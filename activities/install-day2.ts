/**
 * The side effects of one day-2 host's install (workflows/install-day2-host.ts).
 * Idempotent per attempt and retry: the install step id carries both, and
 * what was prepared is recorded on the host in the same transaction as the
 * step, so an activity retried after a crash finds its own work and stops.
 * Status changes go through the state table, compare-and-swap.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { HostRow } from '../src/db/rows';
import type { ServiceContext } from '../src/services/context';
import { hostFacts } from '../src/services/facts-builder';
import { hostDisplayName } from '../src/api/assisted/presenters';
import { installCmdRequest } from '../src/install/install-request';
import { mintJoinCredential, type ClusterPki } from '../src/install/pki';
import { day2IgnitionKey, day2JoinIgnition, importedClusterPointerIgnition } from '../src/install/day2-ignition';
import { applyHostEvent } from '../src/services/status-writer';
import { bootDevice, installerArgsOf, pkiKey } from './install';

type Json = Record<string, unknown>;

/** How long a day-2 host's join credential works: long enough to write the disk, reboot and join, short enough to be worthless later. */
export const JOIN_CREDENTIAL_TTL_MS = 60 * 60_000;

interface Day2Step {
  clusterId: string;
  infraEnvId: string;
  hostId: string;
  attempt: number;
}

export function createDay2Activities(ctx: ServiceContext) {
  /**
   * The host's Ignition with a fresh join credential, and its install step.
   * Runs in the caller's transaction, with the host row locked.
   */
  async function handOut(trx: import('knex').Knex.Transaction, input: Day2Step, h: HostRow, stepId: string): Promise<{ credentialExpiresAt?: string }> {
    const cluster = await ctx.repos.clusters.get(input.clusterId, trx);
    if (!cluster) throw ApplicationFailure.nonRetryable(`cluster ${input.clusterId} no longer exists`, 'not_found');
    const d = cluster.doc as Json;
    const apiVip = ((d.api_vips as Array<{ ip: string }> | undefined) ?? [])[0]?.ip;
    const apiName = d.api_vip_dnsname as string | undefined;
    const pkiText = cluster.install_attempt > 0 && (await ctx.store.stat(pkiKey(cluster.id, cluster.install_attempt))) ? (await ctx.store.getBuffer(pkiKey(cluster.id, cluster.install_attempt))).toString() : undefined;
    let expires: string | undefined;
    let ignition: Record<string, unknown>;
    if (pkiText) {
      // Landfall installed this cluster: the credential is minted from its CA, for this host only.
      const pki = JSON.parse(pkiText) as ClusterPki;
      const cred = mintJoinCredential(pki, JOIN_CREDENTIAL_TTL_MS);
      expires = cred.notAfter;
      ignition = day2JoinIgnition(pki, { clusterName: cluster.name, controlPlaneEndpoint: `${apiVip ?? apiName ?? '127.0.0.1'}:6443`, nodeName: hostDisplayName(h), sshAuthorizedKey: (d.ssh_public_key as string | undefined) || undefined }, cred);
      await ctx.repos.events.add({ name: 'host_join_credential_minted', hostId: h.id, infraEnvId: h.infra_env_id, clusterId: cluster.id, props: { host_name: hostDisplayName(h), token_id: cred.tokenId, expires_at: cred.notAfter } }, trx);
    } else if (apiName) {
      // An imported cluster's CA is not ours: the cluster serves its own worker config, as with assisted-service.
      ignition = importedClusterPointerIgnition(apiName);
    } else {
      throw ApplicationFailure.nonRetryable(`cluster ${cluster.id} has neither a CA Landfall holds nor an API name to fetch a worker config from`, 'no_cluster_ca');
    }
    await ctx.store.put(day2IgnitionKey(cluster.id, h.id), JSON.stringify(ignition), 'application/vnd.coreos.ignition+json');
    const request = installCmdRequest({
      clusterId: cluster.id,
      infraEnvId: h.infra_env_id,
      hostId: h.id,
      role: 'worker',
      bootDevice: bootDevice(h, hostFacts(h, ctx.now().getTime())),
      openshiftVersion: cluster.openshift_version,
      controlPlaneCount: (d.control_plane_count as number | undefined) ?? 3,
      images: ctx.installImages,
      installerArgs: installerArgsOf(h),
      joinExistingCluster: true,
    });
    await ctx.repos.steps.enqueue({ infraEnvId: h.infra_env_id, hostId: h.id }, { step_id: stepId, step_type: 'install', args: [JSON.stringify(request)] }, trx);
    await ctx.repos.hosts.update({ infraEnvId: h.infra_env_id, hostId: h.id }, { doc: { ...(h.doc as Json), day2_prepared: stepId, ...(expires ? { day2_credential_expires_at: expires } : {}) } }, trx);
    return { credentialExpiresAt: expires };
  }

  const lockedHost = async (trx: import('knex').Knex.Transaction, input: Day2Step) => {
    await ctx.repos.clusters.getForUpdate(input.clusterId, trx);
    const h = await ctx.repos.hosts.getForUpdate({ infraEnvId: input.infraEnvId, hostId: input.hostId }, trx);
    if (!h) throw ApplicationFailure.nonRetryable(`host ${input.hostId} no longer exists`, 'not_found');
    return h;
  };

  return {
    /** The first hand-out of an attempt: credential, Ignition, install step `install-day2-a<attempt>`. */
    async prepareDay2Host(input: Day2Step): Promise<{ credentialExpiresAt?: string; skipped?: string }> {
      return ctx.db.transaction(async (trx) => {
        const h = await lockedHost(trx, input);
        const stepId = `install-day2-a${input.attempt}`;
        if ((h.doc as Json).day2_prepared === stepId) return { credentialExpiresAt: (h.doc as Json).day2_credential_expires_at as string | undefined };
        // Reset before the worker got here: nothing to hand out.
        if (h.status !== 'installing') return { skipped: `host is ${h.status}` };
        return handOut(trx, input, h, stepId);
      });
    },

    /** retryDay2Host: error → installing, a new credential and step `install-day2-a<attempt>-r<retry>`. */
    async retryDay2HostInstall(input: Day2Step & { retry: number }): Promise<{ credentialExpiresAt?: string }> {
      return ctx.db.transaction(async (trx) => {
        const h = await lockedHost(trx, input);
        const stepId = `install-day2-a${input.attempt}-r${input.retry}`;
        if ((h.doc as Json).day2_prepared === stepId) return { credentialExpiresAt: (h.doc as Json).day2_credential_expires_at as string | undefined };
        if (h.status !== 'error') throw ApplicationFailure.nonRetryable(`host ${h.id} is ${h.status}; only a host in error can be retried`, 'not_retryable');
        const { row: moved } = await applyHostEvent(ctx, trx, h, { type: 'RetryRequested' }, { patch: { doc: { ...(h.doc as Json), progress: {} } } });
        await ctx.repos.events.add({ name: 'host_install_retried', hostId: h.id, infraEnvId: h.infra_env_id, clusterId: input.clusterId, props: { host_name: hostDisplayName(h), retry: input.retry } }, trx);
        return handOut(trx, input, moved, stepId);
      });
    },

    /** Preparing failed for good: the host fails with the reason, so the user sees it and can retry or reset. */
    async failDay2Host(input: Day2Step & { reason: string }): Promise<void> {
      await ctx.db.transaction(async (trx) => {
        const h = await lockedHost(trx, input);
        await applyHostEvent(ctx, trx, h, { type: 'Day2PreparationFailed', reason: input.reason.slice(0, 300) });
      });
    },

    /** The controller reported the node ready: say so once. */
    async completeDay2Host(input: Omit<Day2Step, 'attempt'>): Promise<void> {
      await ctx.db.transaction(async (trx) => {
        const h = await lockedHost(trx, { ...input, attempt: 0 });
        if ((h.doc as Json).day2_installed_at) return;
        await ctx.repos.hosts.update({ infraEnvId: h.infra_env_id, hostId: h.id }, { doc: { ...(h.doc as Json), day2_installed_at: ctx.now().toISOString() } }, trx);
        await ctx.repos.events.add({ name: 'host_joined_cluster', hostId: h.id, infraEnvId: h.infra_env_id, clusterId: input.clusterId, props: { host_name: hostDisplayName(h), stage: 'ready: the host is installed' } }, trx);
      });
    },
  };
}

export type Day2Activities = ReturnType<typeof createDay2Activities>;
