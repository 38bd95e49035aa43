/**
 * bmc_hosts: one row per machine Landfall drives through its BMC. The only
 * writer of `status` is applyEvent (table lookup, compare-and-swap, event row
 * in the same transaction).
 */
import type { Knex } from 'knex';
import { PREPARED } from '../db/database';
import { nextBmcStatus, type BmcEvent, type BmcStatus } from '../domain/lifecycle/bmc-state-machine';
import type { EventName } from '../domain/event-catalogue';

type Q = Knex | Knex.Transaction;

export interface BmcRow {
  id: string;
  infra_env_id: string;
  host_id: string | null;
  address: string;
  credentials_sealed: string;
  disable_certificate_verification: boolean;
  boot_mac_address: string | null;
  system_uuid: string | null;
  status: BmcStatus;
  status_info: string;
  status_updated_at: Date;
  last_action: { action: string; at: string; ok: boolean; detail: string } | null;
  created_at: Date;
  updated_at: Date;
}

export interface BmcEventWriter {
  add(e: { name: EventName; clusterId?: string | null; hostId?: string | null; infraEnvId?: string | null; props?: Record<string, string | number | boolean | undefined> }, q: Knex.Transaction): Promise<unknown>;
}

export const simulatedSuffix = (address: string): string => (address.startsWith('simulated://') ? ' (simulated BMC)' : '');

export function createBmcRepo(db: Knex) {
  const t = (q: Q = db) => q<BmcRow>('bmc_hosts');
  return {
    async insert(row: Omit<BmcRow, 'status_updated_at' | 'created_at' | 'updated_at' | 'last_action'>, q: Q = db): Promise<BmcRow> {
      const [r] = await t(q).insert(row).returning('*');
      return r as BmcRow;
    },
    get(id: string, q: Q = db): Promise<BmcRow | undefined> {
      return t(q).where({ id }).first();
    },
    getForUpdate(id: string, trx: Knex.Transaction): Promise<BmcRow | undefined> {
      return t(trx).where({ id }).forUpdate().first();
    },
    /** Whether this infra-env has any BMC host at all. */
    async anyIn(infraEnvId: string, q: Q = db): Promise<boolean> {
      return Boolean(await t(q).where({ infra_env_id: infraEnvId }).first(db.raw('1 as one')).options(PREPARED));
    },
    forHost(infraEnvId: string, hostId: string, q: Q = db): Promise<BmcRow | undefined> {
      return t(q).where({ infra_env_id: infraEnvId, host_id: hostId }).first().options(PREPARED);
    },
    list(infraEnvId: string, q: Q = db): Promise<BmcRow[]> {
      return t(q).where({ infra_env_id: infraEnvId }).orderBy([{ column: 'created_at', order: 'asc' }, { column: 'id', order: 'asc' }]);
    },
    /** Enrolments no host carries yet that this host may be: its id is the system UUID, or it has the boot MAC. */
    unmatched(infraEnvId: string, hostId: string, macs: string[], trx: Knex.Transaction): Promise<BmcRow[]> {
      return t(trx)
        .where({ infra_env_id: infraEnvId })
        .whereNull('host_id')
        .where((w) => {
          w.where('system_uuid', hostId.toLowerCase());
          if (macs.length) w.orWhereIn('boot_mac_address', macs);
        })
        .forUpdate();
    },
    async update(id: string, patch: Partial<Omit<BmcRow, 'id' | 'status'>>, q: Q = db): Promise<BmcRow> {
      const [r] = await t(q)
        .where({ id })
        .update({ ...patch, last_action: patch.last_action === undefined ? undefined : (JSON.stringify(patch.last_action) as never), updated_at: db.fn.now() as unknown as Date })
        .returning('*');
      return r as BmcRow;
    },
    async delete(id: string, q: Q = db): Promise<void> {
      await t(q).where({ id }).delete();
    },
    /**
     * The one way an enrolment changes status: the table decides, the UPDATE
     * only lands if nobody moved it meanwhile, and the event goes in the same
     * transaction. Undefined when the event changes nothing in this state.
     */
    async applyEvent(trx: Knex.Transaction, id: string, event: BmcEvent, events: BmcEventWriter, extra: Partial<Pick<BmcRow, 'host_id' | 'system_uuid'>> = {}): Promise<BmcRow | undefined> {
      const row = await t(trx).where({ id }).forUpdate().first();
      if (!row) return undefined;
      const next = nextBmcStatus(row.status, event);
      if (!next) return undefined;
      const [moved] = await t(trx)
        .where({ id, status: row.status })
        .update({ ...extra, status: next.to, status_info: next.info, status_updated_at: db.fn.now() as unknown as Date, updated_at: db.fn.now() as unknown as Date })
        .returning('*');
      if (!moved) return undefined;
      await events.add({ name: 'bmc_status_updated', infraEnvId: row.infra_env_id, hostId: (moved as BmcRow).host_id, props: { bmc_address: row.address, simulated: simulatedSuffix(row.address), src_status: row.status, new_status: next.to, info: next.info } }, trx);
      return moved as BmcRow;
    },
  };
}

export type BmcRepo = ReturnType<typeof createBmcRepo>;
