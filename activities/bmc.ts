/**
 * The BMC's side effects, for the enrolment workflow and the install. A BMC
 * that refuses a call (4xx) fails at once and non-retryably, with a message
 * naming the BMC, the call and its answer; an unreachable or 5xx BMC is
 * retried by the workflow's policy. Each activity reads before it changes,
 * so a retry after a crash part-way repeats nothing harmful.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ServiceContext } from '../src/services/context';
import { parseBmcAddress } from '../src/bmc/address';
import { BmcError, type BmcDriver } from '../src/bmc/driver';
import { simulatedSuffix, type BmcRow } from '../src/bmc/bmc-repo';
import { bootFromDiskNext, bootFromIso } from '../src/bmc/operations';
import { hostnameFromInventory } from '../src/api/assisted/presenters';
import type { HostRow } from '../src/db/rows';

type Json = Record<string, unknown>;

/** Longest a restart waits for the host's logs to be uploaded after it reported Rebooting. */
export const RESTART_LOGS_GRACE_MS = 20_000;

/** Business failure (the BMC said no) or a transient one the policy retries. */
function asFailure(err: unknown): Error {
  if (err instanceof BmcError) return err.details.transient ? new Error(err.message) : ApplicationFailure.nonRetryable(err.message, 'bmc_refused');
  return err as Error;
}

export function createBmcActivities(ctx: ServiceContext) {
  const bmc = () => {
    if (!ctx.bmc) throw ApplicationFailure.nonRetryable('BMC support is not configured in this worker', 'bmc_unconfigured');
    return ctx.bmc;
  };
  const driverFor = async (row: BmcRow): Promise<BmcDriver> => {
    const b = bmc();
    const credentials = (await b.box()).open(row.credentials_sealed, row.id);
    return b.drivers({ address: parseBmcAddress(row.address), credentials, insecure: row.disable_certificate_verification });
  };
  const record = async (row: BmcRow, action: string, ok: boolean, detail: string, host?: { id: string; clusterId: string | null }) => {
    await ctx.db.transaction(async (trx) => {
      await bmc().repo.update(row.id, { last_action: { action, at: ctx.now().toISOString(), ok, detail } }, trx);
      await ctx.repos.events.add(
        ok
          ? { name: 'bmc_action_succeeded', infraEnvId: row.infra_env_id, hostId: host?.id ?? row.host_id, clusterId: host?.clusterId, props: { bmc_address: row.address, simulated: simulatedSuffix(row.address), action, detail } }
          : { name: 'bmc_action_failed', infraEnvId: row.infra_env_id, hostId: host?.id ?? row.host_id, clusterId: host?.clusterId, props: { bmc_address: row.address, simulated: simulatedSuffix(row.address), action, reason: detail } },
        trx,
      );
    });
  };
  /** The discovery ISO URL the BMC fetches: signed as the image-url endpoint signs, at BMC_IMAGE_BASE_URL. */
  const isoUrlFor = async (infraEnvId: string): Promise<string> => {
    const ie = await ctx.repos.infraEnvs.get(infraEnvId);
    if (!ie) throw ApplicationFailure.nonRetryable(`infra-env ${infraEnvId} no longer exists`, 'not_found');
    const doc = ie.doc as Json;
    const type = ((doc.type as string | undefined) ?? 'full-iso').replace('-iso', '');
    const expiresAt = Math.floor(ctx.now().getTime() / 1000) + ctx.imageUrlTtlSeconds;
    const token = (await ctx.imageUrlSigner()).sign({ infraEnvId, version: Number(doc.image_version ?? 0), expiresAt });
    return `${bmc().imageBaseUrl}/images/${infraEnvId}/${type}.iso?image_token=${token}`;
  };
  const hostBmc = async (clusterId: string, hostId: string): Promise<{ host: HostRow; row: BmcRow } | undefined> => {
    const host = await ctx.db<HostRow>('hosts').where({ cluster_id: clusterId, id: hostId }).first();
    if (!host) return undefined;
    const row = await bmc().repo.forHost(host.infra_env_id, hostId);
    return row ? { host, row } : undefined;
  };
  const hostName = (h: HostRow) => h.requested_hostname ?? hostnameFromInventory(h.inventory) ?? h.id;

  return {
    /** Enrolment: the ISO as virtual CD, boot override Cd once, power on (or restart). The System's UUID is kept for matching the agent. */
    async bootBmcHostFromIso(input: { bmcId: string }): Promise<{ status: string; reset?: string; systemUuid?: string }> {
      const row = await bmc().repo.get(input.bmcId);
      if (!row) throw ApplicationFailure.nonRetryable(`BMC host ${input.bmcId} no longer exists`, 'not_found');
      if (row.status !== 'enrolling') return { status: row.status };
      const d = await driverFor(row);
      try {
        const sys = await d.system();
        if (sys.uuid && sys.uuid !== row.system_uuid) await bmc().repo.update(row.id, { system_uuid: sys.uuid });
        const url = await isoUrlFor(row.infra_env_id);
        const r = await bootFromIso(d, url);
        await ctx.db.transaction(async (trx) => {
          await bmc().repo.applyEvent(trx, row.id, { type: 'PowerOnSucceeded', reset: r.reset }, ctx.repos.events);
        });
        await record(row, 'boot from the discovery ISO', true, `virtual media inserted, boot override Cd once, power was ${r.before}, reset ${r.reset}`);
        return { status: 'booting', reset: r.reset, systemUuid: sys.uuid };
      } catch (err) {
        throw asFailure(err);
      }
    },

    /** The enrolment gave up: the reason (BMC, call, answer) becomes the status info and an error event. */
    async markBmcHostFailed(input: { bmcId: string; reason: string }): Promise<void> {
      const row = await bmc().repo.get(input.bmcId);
      if (!row) return;
      await ctx.db.transaction(async (trx) => {
        await bmc().repo.applyEvent(trx, row.id, { type: 'PowerOnFailed', reason: input.reason }, ctx.repos.events);
      });
      await record(row, 'boot from the discovery ISO', false, input.reason);
    },

    /** The image is on the disk: boot device disk for good, discovery ISO out of the drive. */
    async bootHostFromDisk(input: { clusterId: string; hostId: string }): Promise<{ done: boolean; ejected?: boolean }> {
      const found = await hostBmc(input.clusterId, input.hostId);
      if (!found) return { done: false };
      const d = await driverFor(found.row);
      try {
        const r = await bootFromDiskNext(d);
        await record(found.row, `boot host ${hostName(found.host)} from disk`, true, `boot override Hdd continuous${r.ejected ? ', discovery ISO ejected' : ', no virtual media was inserted'}`, { id: found.host.id, clusterId: input.clusterId });
        return { done: true, ejected: r.ejected };
      } catch (err) {
        throw asFailure(err);
      }
    },

    /**
     * The host reported Rebooting: restart it through its BMC once its logs
     * are up (RESTART_LOGS_GRACE_MS at most). Many BMCs, and libvirt behind
     * sushy-tools, apply a boot override and an eject only at a power-on, so
     * the host's own warm reboot could still find the ISO; Ironic ends its
     * deploys with a BMC power cycle for the same reason.
     */
    async restartHostFromDisk(input: { clusterId: string; hostId: string }): Promise<{ done: boolean; waitedMs: number }> {
      const started = Date.now();
      for (;;) {
        const found = await hostBmc(input.clusterId, input.hostId);
        if (!found) return { done: false, waitedMs: Date.now() - started };
        const doc = found.host.doc as Json;
        const progress = (doc.progress ?? {}) as { current_stage?: string; stage_started_at?: string };
        const logsAt = typeof doc.logs_collected_at === 'string' ? Date.parse(doc.logs_collected_at) : NaN;
        const rebootingAt = progress.stage_started_at ? Date.parse(progress.stage_started_at) : NaN;
        const logsUp = logsAt >= rebootingAt;
        if (progress.current_stage !== 'Rebooting' || logsUp || Date.now() - started >= RESTART_LOGS_GRACE_MS) {
          const d = await driverFor(found.row);
          try {
            const before = await d.powerState();
            await d.reset(before === 'Off' ? 'On' : 'ForceRestart');
            await record(found.row, `restart host ${hostName(found.host)} from disk`, true, `power was ${before}; ${logsUp ? 'its logs were uploaded' : 'restarted without waiting longer for its logs'}`, { id: found.host.id, clusterId: input.clusterId });
            return { done: true, waitedMs: Date.now() - started };
          } catch (err) {
            throw asFailure(err);
          }
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    },

    /** The install could not drive a host's BMC: an error event; the host falls back to the user fixing its boot order. */
    async reportBmcFailure(input: { clusterId: string; hostId: string; action: string; reason: string }): Promise<void> {
      const found = await hostBmc(input.clusterId, input.hostId);
      if (found) await record(found.row, input.action, false, input.reason, { id: input.hostId, clusterId: input.clusterId });
    },
  };
}

export type BmcActivities = ReturnType<typeof createBmcActivities>;
