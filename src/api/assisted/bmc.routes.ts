/**
 * BMC routes (a Landfall extension; openapi.yaml tag `bmc`). Each handler is
 * one call into src/bmc/bmc-service.ts; credentials never reach a response.
 */
import type { Response, Router } from 'express';
import type { Principal } from '../../auth/principal';
import type { ServiceContext } from '../../services/context';
import * as bmc from '../../bmc/bmc-service';

const principal = (res: Response): Principal => res.locals.principal as Principal;

export function bmcRoutes(r: Router, ctx: ServiceContext): void {
  r.get('/v2/infra-envs/:infra_env_id/hosts/:host_id/bmc', async (req, res) => {
    res.json(bmc.presentBmc(await bmc.getHostBmc(ctx, principal(res), String(req.params.infra_env_id), String(req.params.host_id))));
  });
  r.put('/v2/infra-envs/:infra_env_id/hosts/:host_id/bmc', async (req, res) => {
    res.status(200).json(bmc.presentBmc(await bmc.setHostBmc(ctx, principal(res), String(req.params.infra_env_id), String(req.params.host_id), req.body)));
  });
  r.delete('/v2/infra-envs/:infra_env_id/hosts/:host_id/bmc', async (req, res) => {
    await bmc.deleteHostBmc(ctx, principal(res), String(req.params.infra_env_id), String(req.params.host_id));
    res.status(204).end();
  });
  r.get('/v2/infra-envs/:infra_env_id/bmc-hosts', async (req, res) => {
    res.json((await bmc.listBmcHosts(ctx, principal(res), String(req.params.infra_env_id))).map(bmc.presentBmc));
  });
  r.post('/v2/infra-envs/:infra_env_id/bmc-hosts', async (req, res) => {
    res.status(202).json(bmc.presentBmc(await bmc.enrollBmcHost(ctx, principal(res), String(req.params.infra_env_id), req.body)));
  });
  r.get('/v2/infra-envs/:infra_env_id/bmc-hosts/:bmc_host_id', async (req, res) => {
    res.json(bmc.presentBmc(await bmc.getBmcHost(ctx, principal(res), String(req.params.infra_env_id), String(req.params.bmc_host_id))));
  });
  r.delete('/v2/infra-envs/:infra_env_id/bmc-hosts/:bmc_host_id', async (req, res) => {
    await bmc.deleteBmcHost(ctx, principal(res), String(req.params.infra_env_id), String(req.params.bmc_host_id));
    res.status(204).end();
  });
}
