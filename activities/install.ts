/**
 * The install's side effects. Each is idempotent, keyed by cluster, attempt
 * and step: a retry after a worker crash finds its own earlier work and does
 * not repeat it (PKI reused, install steps enqueued once by step id, status
 * moves compare-and-swap). Only references and small facts go back to the
 * workflow; Ignition and keys stay in object storage.
 */
import { ApplicationFailure } from '@temporalio/common';
import { stringify as toYaml } from 'yaml';
import type { Knex } from 'knex';
import type { HostRow } from '../src/db/rows';
import type { ServiceContext } from '../src/services/context';
import { nextClusterStatus, type ClusterEvent } from '../src/domain/lifecycle/cluster-state-machine';
import { nextHostStatus, type HostEvent } from '../src/domain/lifecycle/host-state-machine';
import { hostFacts } from '../src/services/facts-builder';
import { applyClusterEvent, applyHostEvent } from '../src/services/status-writer';
import type { HostPatch } from '../src/db/hosts-repo';
import { effectiveRole } from '../src/domain/lifecycle/facts';
import { installConfigOf } from '../src/services/cluster-files-service';
import { generateClusterPki, adminKubeconfig, type ClusterPki } from '../src/install/pki';
import { roleIgnition, type InstallTopology } from '../src/install/role-ignition';
import { hostnameFromInventory } from '../src/api/assisted/presenters';
import { diskSpeedOk } from '../src/domain/lifecycle/disk-speed';
import { installCmdRequest } from '../src/install/install-request';

type Json = Record<string, unknown>;

export interface PreparedHost {
  hostId: string;
  infraEnvId: string;
  role: 'master' | 'worker';
  /** After the pre-install checks started: preparing-for-installation, or already decided from a disk-speed result the host reported before. */
  status: string;
  /** The host has a BMC: the install boots it from disk through it (activities/bmc.ts). Absent in histories from before BMCs. */
  bmc?: boolean;
}

async function moveCluster(ctx: ServiceContext, trx: Knex.Transaction, clusterId: string, event: ClusterEvent, extraDoc: Json = {}) {
  const c = await ctx.repos.clusters.getForUpdate(clusterId, trx);
  if (!c) throw ApplicationFailure.nonRetryable(`cluster ${clusterId} no longer exists`, 'not_found');
  // No rule: already moved (a retry of this activity), or moved on by a user action.
  if (!nextClusterStatus(c.status, event)) return c;
  return (await applyClusterEvent(ctx, trx, c, event, Object.keys(extraDoc).length ? { patch: { doc: { ...(c.doc as Json), ...extraDoc } } } : {})).row;
}

async function moveHost(ctx: ServiceContext, trx: Knex.Transaction, h: HostRow, event: HostEvent, patch: HostPatch = {}) {
  if (!nextHostStatus(h.status, event)) return h;
  return (await applyHostEvent(ctx, trx, h, event, { patch })).row;
}

/** The disk chosen at refresh (installation_disk_path), else the first eligible one. */
export function bootDevice(h: HostRow, facts: ReturnType<typeof hostFacts>): string {
  return ((h.doc as Json).installation_disk_path as string | undefined) || facts.inventory?.disks.find((x) => x.installation_eligibility.eligible)?.path || '/dev/sda';
}

/** The host's extra coreos-installer arguments, stored as assisted-service stores them: a JSON string. */
export function installerArgsOf(h: HostRow): string[] {
  const v = (h.doc as Json).installer_args;
  try {
    const parsed: unknown = typeof v === 'string' ? JSON.parse(v) : v;
    return Array.isArray(parsed) ? parsed.map(String) : [];
  } catch {
    return [];
  }
}

export const pkiKey = (clusterId: string, attempt: number) => `clusters/${clusterId}/attempts/${attempt}/pki.json`;

export function createInstallActivities(ctx: ServiceContext) {
  const clusterHosts = (clusterId: string, q: Knex | Knex.Transaction = ctx.db) => q<HostRow>('hosts').where({ cluster_id: clusterId }).orderBy('id');

  return {
    /** Install config, PKI, per-role Ignition and the admin kubeconfig into storage; hosts start their pre-install checks. */
    async prepareInstallation(input: { clusterId: string; attempt: number }): Promise<{ hosts: PreparedHost[]; controlPlaneCount: number; artifacts: string[] }> {
      const cluster = await ctx.repos.clusters.get(input.clusterId);
      if (!cluster) throw ApplicationFailure.nonRetryable(`cluster ${input.clusterId} no longer exists`, 'not_found');
      const d = cluster.doc as Json;
      let pki: ClusterPki;
      const existing = await ctx.store.stat(pkiKey(input.clusterId, input.attempt));
      if (existing) pki = JSON.parse((await ctx.store.getBuffer(pkiKey(input.clusterId, input.attempt))).toString()) as ClusterPki;
      else {
        pki = generateClusterPki();
        await ctx.store.put(pkiKey(input.clusterId, input.attempt), JSON.stringify(pki), 'application/json');
      }
      const hosts = await clusterHosts(input.clusterId);
      const now = ctx.now().getTime();
      const cp = (d.control_plane_count as number | undefined) ?? 3;
      const single = cp === 1 ? hosts[0] : undefined;
      const singleIp = single ? hostFacts(single, now).inventory?.interfaces.find((i) => i.ipv4_addresses.length)?.ipv4_addresses[0]?.split('/')[0] : undefined;
      const apiVip = ((d.api_vips as Array<{ ip: string }> | undefined) ?? [])[0]?.ip ?? singleIp ?? '127.0.0.1';
      const topology: InstallTopology = {
        clusterName: cluster.name,
        kubernetesVersion: ctx.releases[cluster.openshift_version]?.kubernetes_version ?? `${cluster.openshift_version}.0`,
        controlPlaneEndpoint: `${apiVip}:6443`,
        bootstrapAddress: singleIp ?? apiVip,
        podSubnet: ((d.cluster_networks as Array<{ cidr: string }> | undefined) ?? [])[0]?.cidr ?? '10.128.0.0/14',
        serviceSubnet: ((d.service_networks as Array<{ cidr: string }> | undefined) ?? [])[0]?.cidr ?? '172.30.0.0/16',
        sshAuthorizedKey: (d.ssh_public_key as string | undefined) || undefined,
      };
      const artifacts: string[] = [];
      for (const role of ['bootstrap', 'master', 'worker'] as const) {
        const key = `clusters/${input.clusterId}/ignition/${role}.ign`;
        await ctx.store.put(key, JSON.stringify(roleIgnition(role, pki, topology)), 'application/vnd.coreos.ignition+json');
        artifacts.push(key);
      }
      await ctx.store.put(`clusters/${input.clusterId}/install-config.yaml`, toYaml(installConfigOf(cluster, hosts)), 'application/yaml');
      await ctx.store.put(`clusters/${input.clusterId}/metadata.json`, JSON.stringify({ clusterName: cluster.name, clusterID: cluster.id, infraID: `${cluster.name}-${cluster.id.slice(0, 5)}`, attempt: input.attempt }), 'application/json');
      const kubeconfig = adminKubeconfig(pki, cluster.name, `https://${topology.controlPlaneEndpoint}`);
      await ctx.store.put(`clusters/${input.clusterId}/credentials/kubeconfig`, kubeconfig, 'application/yaml');
      await ctx.store.put(`clusters/${input.clusterId}/credentials/kubeconfig-noingress`, kubeconfig, 'application/yaml');
      artifacts.push(`clusters/${input.clusterId}/credentials/kubeconfig`);

      // Hosts begin the pre-install checks; the install disk speed arrives as a step reply.
      const prepared = await ctx.db.transaction(async (trx) => {
        const locked = await ctx.repos.clusters.getForUpdate(input.clusterId, trx);
        // Cancelled before this ran (the cluster went back to ready and its hosts stay known): move no host,
        // or they would sit in preparing under a ready cluster. The workflow learns of the cancel by its signal.
        const stillPreparing = locked?.status === 'preparing-for-installation';
        const rows = await clusterHosts(input.clusterId, trx).forUpdate();
        const clusterFactsHosts = rows.map((r) => hostFacts(r, now));
        const out: PreparedHost[] = [];
        for (const [i, r] of rows.entries()) {
          if (!stillPreparing) {
            out.push({ hostId: r.id, infraEnvId: r.infra_env_id, role: effectiveRole(clusterFactsHosts[i]!, { controlPlaneCount: cp } as never) === 'worker' ? 'worker' : 'master', status: r.status });
            continue;
          }
          let moved = await moveHost(ctx, trx, r, { type: 'InstallStarted' });
          // The agent does not resend an identical disk-speed result (its reply cache), so one measured before decides now.
          const ok = diskSpeedOk((moved.doc as Json).disks_info as string | undefined);
          if (ok !== undefined) moved = await moveHost(ctx, trx, moved, { type: 'DiskSpeedReported', ok });
          const role = effectiveRole(clusterFactsHosts[i]!, { controlPlaneCount: cp } as never);
          const bmc = ctx.bmc ? Boolean(await ctx.bmc.repo.forHost(r.infra_env_id, r.id, trx)) : false;
          out.push({ hostId: r.id, infraEnvId: r.infra_env_id, role: role === 'worker' ? 'worker' : 'master', status: moved.status, ...(bmc ? { bmc } : {}) });
        }
        return out;
      });
      return { hosts: prepared, controlPlaneCount: cp, artifacts };
    },

    /** Preparation failed or timed out: cluster back to ready, hosts back to known (reference §4). */
    async abortPreparation(input: { clusterId: string; reason: string }): Promise<void> {
      await ctx.db.transaction(async (trx) => {
        await moveCluster(ctx, trx, input.clusterId, { type: 'PreparationFailed' });
        for (const h of await clusterHosts(input.clusterId, trx).forUpdate()) await moveHost(ctx, trx, h, { type: 'PreparationAborted' });
        await ctx.repos.events.add({ name: 'cluster_preparation_failed', clusterId: input.clusterId, props: { reason: input.reason } }, trx);
      });
    },

    /** The bootstrap control-plane host: one already chosen, else the last id among the control-plane hosts (reference §8). */
    async selectBootstrapHost(input: { clusterId: string; candidates: string[] }): Promise<string> {
      return ctx.db.transaction(async (trx) => {
        const rows = await clusterHosts(input.clusterId, trx).forUpdate();
        const chosen = rows.find((r) => r.bootstrap);
        if (chosen) return chosen.id;
        const id = [...input.candidates].sort().at(-1);
        if (!id) throw ApplicationFailure.nonRetryable('no control-plane host to bootstrap the cluster', 'no_bootstrap_host');
        const row = rows.find((r) => r.id === id)!;
        await ctx.repos.hosts.update({ infraEnvId: row.infra_env_id, hostId: id }, { bootstrap: true }, trx);
        return id;
      });
    },

    /** Cluster and hosts to installing, and the install step into each host's queue (once per attempt: the step id is the key). */
    async dispatchInstallSteps(input: { clusterId: string; attempt: number; bootstrapHostId: string; hosts: PreparedHost[]; controlPlaneCount: number }): Promise<{ dispatched: number }> {
      return ctx.db.transaction(async (trx) => {
        const cluster = await moveCluster(ctx, trx, input.clusterId, { type: 'HostsPrepared' });
        const rows = await clusterHosts(input.clusterId, trx).forUpdate();
        let dispatched = 0;
        for (const r of rows) {
          const planned = input.hosts.find((h) => h.hostId === r.id);
          if (!planned) continue;
          const facts = hostFacts(r, ctx.now().getTime());
          const role = r.id === input.bootstrapHostId ? 'bootstrap' : planned.role;
          const moved = await moveHost(ctx, trx, r, { type: 'InstallDispatched' }, { role: planned.role });
          // A host that did not move (the install was cancelled meanwhile) gets no install step.
          if (moved.status !== 'installing') continue;
          const request = installCmdRequest({ clusterId: input.clusterId, infraEnvId: r.infra_env_id, hostId: r.id, role, bootDevice: bootDevice(r, facts), openshiftVersion: cluster.openshift_version, controlPlaneCount: input.controlPlaneCount, images: ctx.installImages, installerArgs: installerArgsOf(r) });
          await ctx.repos.steps.enqueue({ infraEnvId: r.infra_env_id, hostId: r.id }, { step_id: `install-a${input.attempt}`, step_type: 'install', args: [JSON.stringify(request)] }, trx);
          dispatched++;
        }
        const bootstrap = rows.find((r) => r.id === input.bootstrapHostId);
        await ctx.repos.events.add({ name: 'cluster_installation_started', clusterId: input.clusterId, props: { cluster_name: cluster.name, attempt: input.attempt, bootstrap_host: bootstrap?.requested_hostname ?? hostnameFromInventory(bootstrap?.inventory ?? null) ?? input.bootstrapHostId } }, trx);
        return { dispatched };
      });
    },

    /** A stage ran past its timeout: soft → a warning event; hard → the host fails. */
    async reportStageTimeout(input: { clusterId: string; hostId: string; stage: string; minutes: number; seconds?: number; hard: boolean }): Promise<void> {
      await ctx.db.transaction(async (trx) => {
        await ctx.repos.clusters.getForUpdate(input.clusterId, trx);
        const h = await trx<HostRow>('hosts').where({ cluster_id: input.clusterId, id: input.hostId }).forUpdate().first();
        if (!h) return;
        const name = h.requested_hostname ?? hostnameFromInventory(h.inventory) ?? h.id;
        await ctx.repos.events.add({ name: 'host_stage_timed_out', hostId: h.id, infraEnvId: h.infra_env_id, clusterId: input.clusterId, severity: input.hard ? 'error' : 'warning', props: { host_name: name, stage: input.stage, minutes: input.minutes, duration: stageAge(input), kind: input.hard ? 'hard' : 'soft', consequence: input.hard ? '; the host failed' : '; still waiting' } }, trx);
        if (input.hard) await moveHost(ctx, trx, h, { type: 'StageTimedOut', stage: input.stage });
      });
    },

    async markClusterFailed(input: { clusterId: string; reason: string }): Promise<void> {
      await ctx.db.transaction(async (trx) => {
        await moveCluster(ctx, trx, input.clusterId, { type: 'InstallFailed', reason: input.reason });
        // Where installs fail: the stage the (first) failed host was in, for the metrics.
        const failed = await clusterHosts(input.clusterId, trx).where({ status: 'error' }).first();
        const progress = (failed?.doc as Json | undefined)?.progress as { current_stage?: string; failed_at_stage?: string } | undefined;
        const stage = progress?.failed_at_stage ?? progress?.current_stage ?? (failed ? 'unknown' : 'finalizing');
        await ctx.repos.events.add({ name: 'cluster_installation_failed', clusterId: input.clusterId, props: { reason: input.reason, failing_stage: stage } }, trx);
      });
    },

    /** A host waits for the user (wrong boot order): the cluster says so too, and goes back when none waits. */
    async markHostsPendingUser(input: { clusterId: string; pending: boolean }): Promise<void> {
      await ctx.db.transaction((trx) => moveCluster(ctx, trx, input.clusterId, { type: 'HostNeedsUser', pending: input.pending }));
    },

    async startFinalizing(input: { clusterId: string }): Promise<void> {
      await ctx.db.transaction(async (trx) => {
        const c = await moveCluster(ctx, trx, input.clusterId, { type: 'SuccessRuleMet' }, {});
        await ctx.repos.events.add({ name: 'cluster_finalizing_started', clusterId: input.clusterId, props: { cluster_name: c.name } }, trx);
      });
    },

    async completeInstallation(input: { clusterId: string }): Promise<void> {
      await ctx.db.transaction(async (trx) => {
        const before = await ctx.repos.clusters.get(input.clusterId, trx);
        const c = await moveCluster(ctx, trx, input.clusterId, { type: 'ComponentsAvailable' }, { install_completed_at: ctx.now().toISOString(), progress: { ...((before?.doc as Json | undefined)?.progress as Json | undefined), total_percentage: 100 } });
        if (c.status === 'installed') await ctx.repos.events.add({ name: 'cluster_installation_completed', clusterId: input.clusterId, props: { cluster_name: c.name } }, trx);
      });
    },

    /** retryHost: the failed host goes back to installing with a fresh install step (step id keyed by the retry number). */
    async retryHostInstall(input: { clusterId: string; attempt: number; hostId: string; retry: number; bootstrapHostId: string; controlPlaneCount: number }): Promise<void> {
      await ctx.db.transaction(async (trx) => {
        const c = await moveCluster(ctx, trx, input.clusterId, { type: 'HostRetried' });
        const h = await trx<HostRow>('hosts').where({ cluster_id: input.clusterId, id: input.hostId }).forUpdate().first();
        if (!h) throw ApplicationFailure.nonRetryable(`host ${input.hostId} is not in the cluster`, 'not_found');
        const moved = await moveHost(ctx, trx, h, { type: 'RetryRequested' }, { doc: { ...(h.doc as Json), progress: {} } });
        if (moved.status !== 'installing' && h.status !== 'installing') return;
        const role = h.id === input.bootstrapHostId ? 'bootstrap' : h.role === 'worker' ? 'worker' : 'master';
        const request = installCmdRequest({ clusterId: input.clusterId, infraEnvId: h.infra_env_id, hostId: h.id, role, bootDevice: bootDevice(h, hostFacts(h, Date.now())), openshiftVersion: c.openshift_version, controlPlaneCount: input.controlPlaneCount, images: ctx.installImages, installerArgs: installerArgsOf(h) });
        await ctx.repos.steps.enqueue({ infraEnvId: h.infra_env_id, hostId: h.id }, { step_id: `install-a${input.attempt}-r${input.retry}`, step_type: 'install', args: [JSON.stringify(request)] }, trx);
        await ctx.repos.events.add({ name: 'host_install_retried', hostId: h.id, infraEnvId: h.infra_env_id, clusterId: input.clusterId, props: { host_name: h.requested_hostname ?? hostnameFromInventory(h.inventory) ?? h.id, retry: input.retry } }, trx);
      });
    },
  };
}

export type InstallActivities = ReturnType<typeof createInstallActivities>;

/** How long a stage has run, for people: seconds while short (tests use tiny timeouts), minutes after. */
function stageAge(input: { minutes: number; seconds?: number }): string {
  const s = input.seconds ?? input.minutes * 60;
  if (s < 120) return `${s} seconds`;
  return `${Math.round(s / 60)} minutes`;
}
