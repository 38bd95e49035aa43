import type { Knex } from 'knex';
import { PREPARED } from './database';
import type { StepRow } from './rows';
import type { HostKey } from './hosts-repo';

type Q = Knex | Knex.Transaction;

/** SQL, on host_steps: its host has reported no install stage (so an install step sent to it never arrived). */
export const INSTALL_NOT_STARTED = "not exists (select 1 from hosts h where h.infra_env_id = host_steps.infra_env_id and h.id = host_steps.host_id and h.doc->'progress'->>'current_stage' is not null)";

/** The per-host step queue. Steps are idempotent by (host, step_id). */
export function createStepsRepo(db: Knex) {
  const t = (q: Q = db) => q<StepRow>('host_steps');
  return {
    async enqueue(k: HostKey, step: { step_id: string; step_type: string; args: string[] }, q: Q = db): Promise<void> {
      await t(q)
        .insert({ infra_env_id: k.infraEnvId, host_id: k.hostId, step_id: step.step_id, step_type: step.step_type, args: JSON.stringify(step.args) as unknown as string[] })
        .onConflict(['infra_env_id', 'host_id', 'step_id'])
        .ignore();
    },
    /**
     * Hands out every pending step once; a step the agent never answered is handed out again after
     * `resendAfterMs`. An install step only while its host has reported no stage since: then the
     * answer that carried it was lost on the way (the agent runs a step id once, so a slow agent is
     * not made to run it twice); once the host reports a stage the step is known to have arrived.
     */
    async takeDue(k: HostKey, resendAfterMs: number, q: Q = db): Promise<StepRow[]> {
      const cutoff = new Date(Date.now() - resendAfterMs);
      return t(q)
        .where({ infra_env_id: k.infraEnvId, host_id: k.hostId })
        .andWhere((w) => w.where({ state: 'pending' }).orWhere((o) => o.where({ state: 'sent' }).andWhere('sent_at', '<', cutoff).andWhere((i) => i.whereNot({ step_type: 'install' }).orWhereRaw(INSTALL_NOT_STARTED))))
        .update({ state: 'sent', sent_at: new Date(), attempts: db.raw('attempts + 1') as unknown as number })
        .returning('*')
        .options(PREPARED);
    },
    async recordReply(k: HostKey, stepId: string, reply: { exit_code: number; output: string; error: string }, q: Q = db): Promise<StepRow | undefined> {
      const [r] = await t(q)
        .where({ infra_env_id: k.infraEnvId, host_id: k.hostId, step_id: stepId })
        .update({ state: 'replied', replied_at: new Date(), ...reply })
        .returning('*')
        .options(PREPARED);
      return r as StepRow | undefined;
    },
    /** The step of this type the service asked the host for last (an install retry enqueues a new install step). */
    async latestOfType(k: HostKey, stepType: string, q: Q = db): Promise<StepRow | undefined> {
      return (await t(q).where({ infra_env_id: k.infraEnvId, host_id: k.hostId, step_type: stepType }).orderBy('seq', 'desc').first()) as StepRow | undefined;
    },
    /** Closes the host's unanswered steps, of one type or all (its install finished; no reply will come). */
    async closeSent(k: HostKey, stepType: string | undefined, q: Q = db): Promise<number> {
      return t(q)
        .where({ infra_env_id: k.infraEnvId, host_id: k.hostId, state: 'sent', ...(stepType ? { step_type: stepType } : {}) })
        .update({ state: 'closed' as StepRow['state'], replied_at: new Date() });
    },
    list(k: HostKey, q: Q = db): Promise<StepRow[]> {
      return t(q).where({ infra_env_id: k.infraEnvId, host_id: k.hostId }).orderBy('seq');
    },
  };
}

export type StepsRepo = ReturnType<typeof createStepsRepo>;
