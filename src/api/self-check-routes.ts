import { Router } from 'express';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { badRequest, notFound } from '../errors';
import type { SelfCheckRepo } from '../db/self-checks-repo';
import { TASK_QUEUE, workflowIds } from '../temporal/names';
import type { selfCheckWorkflow } from '../../workflows/self-check';

const createBody = z.object({ message: z.string().max(1000).default('self-check') }).strict();
const uuid = z.uuid();

function present(row: NonNullable<Awaited<ReturnType<SelfCheckRepo['get']>>>) {
  return {
    id: row.id,
    status: row.status,
    message: row.message,
    workflow_id: row.workflow_id,
    object_key: row.object_key ?? undefined,
    storage: row.storage ?? undefined,
    error: row.error ?? undefined,
    created_at: new Date(row.created_at).toISOString(),
    completed_at: row.completed_at ? new Date(row.completed_at).toISOString() : undefined,
  };
}

/**
 * POST runs a round trip through every dependency: a row in PostgreSQL, a
 * workflow on Temporal, an activity on a worker, an object in storage.
 */
export function selfCheckRoutes(deps: { selfChecks: SelfCheckRepo; temporal: Client }): Router {
  const r = Router();
  r.post('/self-checks', async (req, res) => {
    const parsed = createBody.safeParse(req.body ?? {});
    if (!parsed.success) throw badRequest(`invalid self-check: ${parsed.error.issues[0]?.message}`);
    const id = randomUUID();
    const workflowId = workflowIds.selfCheck(id);
    const row = await deps.selfChecks.insert({ id, message: parsed.data.message, workflow_id: workflowId });
    try {
      await deps.temporal.workflow.start<typeof selfCheckWorkflow>('selfCheckWorkflow', {
        workflowId,
        taskQueue: TASK_QUEUE.install,
        args: [id],
        workflowExecutionTimeout: '5 minutes',
      });
    } catch (err) {
      await deps.selfChecks.fail(id, 'could not start the workflow: Temporal is unavailable');
      throw err;
    }
    res.status(202).location(`/api/landfall/v1/self-checks/${id}`).json(present(row));
  });
  r.get('/self-checks/:id', async (req, res) => {
    if (!uuid.safeParse(req.params.id).success) throw badRequest('self-check id must be a UUID');
    const row = await deps.selfChecks.get(req.params.id);
    if (!row) throw notFound('self-check');
    res.json(present(row));
  });
  return r;
}
