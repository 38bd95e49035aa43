/**
 * The assisted-service v2 routes. Each handler takes what the OpenAPI
 * validator already checked, calls one use-case, and shapes the response with
 * the status code AS uses (PATCH 201, actions 202, deletes 204, …).
 */
import { Router, type Request, type Response } from 'express';
import { pipeline } from 'node:stream/promises';
import Busboy from 'busboy';
import type { Principal } from '../../auth/principal';
import { badRequest, conflict } from '../../errors';
import type { ServiceContext } from '../../services/context';
import * as clusters from '../../services/clusters-service';
import * as infraEnvs from '../../services/infra-envs-service';
import * as hosts from '../../services/hosts-service';
import * as day2 from '../../services/day2-service';
import * as agent from '../../services/agent-service';
import * as files from '../../services/cluster-files-service';
import * as events from '../../services/events-service';
import { getInstallReport } from '../../services/install-report-service';
import * as logs from '../../services/logs-service';
import type { Severity } from '../../domain/event-catalogue';
import { releasesMatching } from '../../domain/releases';
import { presentCluster, presentEvent, presentHost, presentInfraEnv, presentManifest, presentRegistration } from './presenters';
import { streamEvents } from '../event-stream';
import { componentVersions } from '../../versions';
import { bmcRoutes } from './bmc.routes';

const principal = (res: Response): Principal => res.locals.principal as Principal;
const rid = (req: Request): string | undefined => (req as unknown as { id?: string }).id;
const param = (req: Request, name: string): string => String(req.params[name]);
/** The validator may already have coerced a query value to a number or boolean; hand it on as text. */
const q = (req: Request, name: string): string | undefined => {
  const v = req.query[name] as unknown;
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;
};
const qList = (req: Request, name: string): string[] | undefined => {
  const v = req.query[name];
  if (v === undefined) return undefined;
  return (Array.isArray(v) ? v : [v]).flatMap((x) => String(x).split(',')).filter(Boolean);
};
const qBool = (req: Request, name: string): boolean | undefined => {
  const v = req.query[name] as unknown;
  return v === undefined ? undefined : v === true || v === 'true';
};

const mergeHostIds = (list: string[] | undefined, one: string | undefined): string[] | undefined => (one ? [...new Set([...(list ?? []), one])] : list);

/** Every documented download is application/octet-stream, as assisted-service answers them (its document says so too). */
function sendFile(res: Response, fileName: string, body: Buffer) {
  res.status(200).setHeader('Content-Type', 'application/octet-stream').setHeader('Content-Disposition', `attachment; filename="${fileName}"`).send(body);
}

export function assistedRoutes(ctx: ServiceContext): Router {
  const r = Router();

  // ---- releases
  r.get('/v2/openshift-versions', (req, res) => {
    const out: Record<string, unknown> = {};
    for (const [v, rel] of releasesMatching(ctx.releases, q(req, 'version'))) {
      out[v] = { display_name: rel.display_name, support_level: rel.support_level, default: Boolean(rel.default), cpu_architectures: rel.cpu_architectures };
    }
    res.json(out);
  });

  r.get('/v2/component-versions', (_req, res) => {
    res.json(componentVersions());
  });
  // Optional operators a cluster may be created with (AS's OLM operators): Landfall installs none.
  r.get('/v2/supported-operators', (_req, res) => {
    res.json([]);
  });

  // ---- clusters
  r.post('/v2/clusters', async (req, res) => {
    const row = await clusters.createCluster(ctx, principal(res), req.body, rid(req));
    res.status(201).json(presentCluster(row, []));
  });
  // Day 2: an existing cluster, to add hosts to (registered before /v2/clusters/:cluster_id can match "import").
  r.post('/v2/clusters/import', async (req, res) => {
    const row = await day2.importCluster(ctx, principal(res), req.body ?? {}, rid(req));
    res.status(201).json(presentCluster(row, []));
  });
  r.get('/v2/clusters', async (req, res) => {
    const list = await clusters.listClusters(ctx, principal(res));
    const withHosts = qBool(req, 'with_hosts') === true;
    res.json(await Promise.all(list.map(async (c) => presentCluster(c, withHosts ? await ctx.repos.hosts.list({ clusterId: c.id }) : undefined))));
  });
  r.get('/v2/clusters/:cluster_id', async (req, res) => {
    const { cluster, hosts: h } = await clusters.getClusterWithHosts(ctx, principal(res), param(req, 'cluster_id'), qBool(req, 'exclude-hosts') !== true);
    res.json(presentCluster(cluster, h));
  });
  r.patch('/v2/clusters/:cluster_id', async (req, res) => {
    const row = await clusters.updateCluster(ctx, principal(res), param(req, 'cluster_id'), req.body ?? {}, rid(req));
    res.status(201).json(presentCluster(row, await ctx.repos.hosts.list({ clusterId: row.id })));
  });
  r.delete('/v2/clusters/:cluster_id', async (req, res) => {
    await clusters.deleteCluster(ctx, principal(res), param(req, 'cluster_id'), rid(req));
    res.status(204).end();
  });
  const action = (path: string, fn: (id: string, p: Principal, requestId?: string) => Promise<import('../../db/rows').ClusterRow>) =>
    r.post(`/v2/clusters/:cluster_id/actions/${path}`, async (req, res) => {
      const row = await fn(param(req, 'cluster_id'), principal(res), rid(req));
      res.status(202).json(presentCluster(row, await ctx.repos.hosts.list({ clusterId: row.id })));
    });
  action('install', (id, p, x) => clusters.installCluster(ctx, p, id, x));
  action('cancel', (id, p, x) => clusters.cancelInstallation(ctx, p, id, x));
  action('reset', (id, p, x) => clusters.resetCluster(ctx, p, id, x));
  action('refresh', (id, p, x) => clusters.refreshClusterNow(ctx, p, id, x));
  action('allow-add-workers', (id, p, x) => day2.allowAddWorkers(ctx, p, id, x));
  action('allow-add-hosts', (id, p, x) => day2.allowAddWorkers(ctx, p, id, x));
  r.post('/v2/infra-envs/:infra_env_id/hosts/:host_id/actions/install', async (req, res) => {
    res.status(202).json(presentHost(await day2.installDay2Host(ctx, principal(res), param(req, 'infra_env_id'), param(req, 'host_id'), rid(req))));
  });
  r.post('/v2/infra-envs/:infra_env_id/hosts/:host_id/actions/reset', async (req, res) => {
    res.status(200).json(presentHost(await day2.resetDay2Host(ctx, principal(res), param(req, 'infra_env_id'), param(req, 'host_id'), rid(req))));
  });
  r.post('/v2/infra-envs/:infra_env_id/hosts/:host_id/actions/retry-install', async (req, res) => {
    res.status(202).json(presentHost(await hosts.retryHostInstall(ctx, principal(res), param(req, 'infra_env_id'), param(req, 'host_id'))));
  });
  r.post('/v2/infra-envs/:infra_env_id/hosts/:host_id/actions/refresh', async (req, res) => {
    res.status(202).json(presentHost(await hosts.refreshHostNow(ctx, principal(res), param(req, 'infra_env_id'), param(req, 'host_id'), rid(req))));
  });
  r.post('/v2/clusters/:cluster_id/actions/complete-installation', async (req, res) => {
    const row = await files.completeInstallation(ctx, principal(res), param(req, 'cluster_id'), req.body, rid(req));
    res.status(202).json(presentCluster(row, await ctx.repos.hosts.list({ clusterId: row.id })));
  });
  r.get('/v2/clusters/:cluster_id/hosts', async (req, res) => {
    const list = await hosts.listClusterHosts(ctx, principal(res), param(req, 'cluster_id'), { role: q(req, 'role'), status: q(req, 'status') });
    res.json(list.map(presentHost));
  });

  // ---- cluster files, config, credentials, logs, reports
  r.get('/v2/clusters/:cluster_id/install-config', async (req, res) => {
    res.json(await files.getInstallConfig(ctx, principal(res), param(req, 'cluster_id')));
  });
  r.patch('/v2/clusters/:cluster_id/install-config', async (req, res) => {
    if (typeof req.body !== 'string') throw badRequest('the body must be a JSON string holding the install-config overrides');
    await files.patchInstallConfig(ctx, principal(res), param(req, 'cluster_id'), req.body, rid(req));
    res.status(201).end();
  });
  r.get('/v2/clusters/:cluster_id/manifests', async (req, res) => {
    res.json((await files.listManifests(ctx, principal(res), param(req, 'cluster_id'))).map(presentManifest));
  });
  r.post('/v2/clusters/:cluster_id/manifests', async (req, res) => {
    res.status(201).json(presentManifest(await files.createManifest(ctx, principal(res), param(req, 'cluster_id'), req.body, rid(req))));
  });
  r.patch('/v2/clusters/:cluster_id/manifests', async (req, res) => {
    res.status(200).json(presentManifest(await files.updateManifest(ctx, principal(res), param(req, 'cluster_id'), req.body)));
  });
  r.delete('/v2/clusters/:cluster_id/manifests', async (req, res) => {
    await files.deleteManifest(ctx, principal(res), param(req, 'cluster_id'), q(req, 'folder') ?? 'manifests', q(req, 'file_name')!, rid(req));
    res.status(200).end();
  });
  r.get('/v2/clusters/:cluster_id/manifests/files', async (req, res) => {
    const m = await files.getManifest(ctx, principal(res), param(req, 'cluster_id'), q(req, 'folder') ?? 'manifests', q(req, 'file_name')!);
    sendFile(res, m.file_name, Buffer.from(m.content, 'base64'));
  });
  r.get('/v2/clusters/:cluster_id/credentials', async (req, res) => {
    res.json(await files.getCredentials(ctx, principal(res), param(req, 'cluster_id')));
  });
  r.get('/v2/clusters/:cluster_id/downloads/credentials', async (req, res) => {
    const name = q(req, 'file_name')!;
    sendFile(res, name, await files.downloadCredentials(ctx, principal(res), param(req, 'cluster_id'), name));
  });
  r.get('/v2/clusters/:cluster_id/downloads/files', async (req, res) => {
    const name = q(req, 'file_name')!;
    sendFile(res, name, await files.downloadClusterFile(ctx, principal(res), param(req, 'cluster_id'), name));
  });
  r.get('/v2/clusters/:cluster_id/logs', async (req, res) => {
    const logsType = q(req, 'logs_type') ?? 'all';
    if (!['host', 'controller', 'all'].includes(logsType)) throw badRequest('logs_type: must be host, controller or all', { field: 'logs_type' });
    const f = await logs.downloadLogs(ctx, principal(res), param(req, 'cluster_id'), logsType, q(req, 'host_id'));
    res.status(200).setHeader('Content-Type', 'application/octet-stream').setHeader('Content-Disposition', `attachment; filename="${f.fileName}"`);
    // Headers are out: a failure from here on can only cut the download short.
    await pipeline(f.stream, res).catch(() => res.destroy());
  });
  r.post('/v2/clusters/:cluster_id/logs', async (req, res) => {
    const logsType = q(req, 'logs_type');
    if (logsType !== 'host' && logsType !== 'controller') throw badRequest('logs_type: must be host or controller', { field: 'logs_type' });
    if (!String(req.headers['content-type'] ?? '').startsWith('multipart/form-data')) throw badRequest('logs must be uploaded as multipart/form-data with an "upfile" part');
    const query = { logs_type: logsType, host_id: q(req, 'host_id'), infra_env_id: q(req, 'infra_env_id') };
    // Who may upload is checked before a byte is read; then the upload streams straight into object storage.
    await logs.checkUpload(ctx, principal(res), param(req, 'cluster_id'), query);
    await new Promise<void>((resolve, reject) => {
      let bb: ReturnType<typeof Busboy>;
      try {
        bb = Busboy({ headers: req.headers, limits: { files: 1, fileSize: logs.logsSettings(ctx).uploadMaxBytes + 1 } });
      } catch (err) {
        // A multipart Content-Type without a boundary (busboy refuses it before reading anything).
        return reject(badRequest(`logs must be uploaded as multipart/form-data with a boundary: ${(err as Error).message}`));
      }
      let seen = false;
      bb.on('file', (field, stream) => {
        if (field !== 'upfile') {
          stream.resume();
          return;
        }
        seen = true;
        logs.uploadLogs(ctx, principal(res), param(req, 'cluster_id'), query, stream, rid(req)).then(resolve, (err) => {
          stream.resume();
          reject(err);
        });
      });
      bb.on('error', () => reject(badRequest('the multipart body could not be read')));
      bb.on('close', () => {
        if (!seen) reject(badRequest('the multipart body has no "upfile" part'));
      });
      req.pipe(bb);
    });
    res.status(204).end();
  });
  r.get('/v2/clusters/:cluster_id/install-report', async (req, res) => {
    const report = await getInstallReport(ctx, principal(res), param(req, 'cluster_id'));
    if (qBool(req, 'download')) res.setHeader('Content-Disposition', `attachment; filename="${report.cluster_name}_${report.cluster_id}_install-report.json"`);
    res.json(report);
  });
  r.put('/v2/clusters/:cluster_id/logs-progress', async (req, res) => {
    await logs.updateClusterLogsProgress(ctx, principal(res), param(req, 'cluster_id'), req.body.logs_state);
    res.status(204).end();
  });
  r.put('/v2/clusters/:cluster_id/progress', async (req, res) => {
    await files.updateFinalizingProgress(ctx, principal(res), param(req, 'cluster_id'), req.body.finalizing_stage);
    res.status(200).end();
  });
  r.get('/v2/clusters/:cluster_id/monitored-operators', async (req, res) => {
    res.json(await files.listMonitoredOperators(ctx, principal(res), param(req, 'cluster_id'), q(req, 'operator_name')));
  });
  r.put('/v2/clusters/:cluster_id/monitored-operators', async (req, res) => {
    await files.reportOperator(ctx, principal(res), param(req, 'cluster_id'), req.body, rid(req));
    res.status(200).end();
  });
  r.post('/v2/clusters/:cluster_id/uploads/ingress-cert', async (req, res) => {
    if (typeof req.body !== 'string') throw badRequest('the body must be a JSON string holding a PEM certificate');
    await files.uploadIngressCert(ctx, principal(res), param(req, 'cluster_id'), req.body);
    res.status(201).end();
  });

  // ---- infra-envs
  r.post('/v2/infra-envs', async (req, res) => {
    res.status(201).json(presentInfraEnv(await infraEnvs.createInfraEnv(ctx, principal(res), req.body, rid(req))));
  });
  r.get('/v2/infra-envs', async (req, res) => {
    res.json((await infraEnvs.listInfraEnvs(ctx, principal(res), q(req, 'cluster_id'))).map(presentInfraEnv));
  });
  r.get('/v2/infra-envs/:infra_env_id', async (req, res) => {
    res.json(presentInfraEnv(await infraEnvs.getInfraEnv(ctx, principal(res), param(req, 'infra_env_id'))));
  });
  r.patch('/v2/infra-envs/:infra_env_id', async (req, res) => {
    res.status(201).json(presentInfraEnv(await infraEnvs.updateInfraEnv(ctx, principal(res), param(req, 'infra_env_id'), req.body ?? {}, rid(req))));
  });
  r.delete('/v2/infra-envs/:infra_env_id', async (req, res) => {
    await infraEnvs.deleteInfraEnv(ctx, principal(res), param(req, 'infra_env_id'), rid(req));
    res.status(204).end();
  });
  r.get('/v2/infra-envs/:infra_env_id/downloads/image-url', async (req, res) => {
    res.json(await infraEnvs.imageUrl(ctx, principal(res), param(req, 'infra_env_id')));
  });
  r.get('/v2/infra-envs/:infra_env_id/downloads/files', async (req, res) => {
    const { loadInfraEnv } = await import('../../services/access');
    const ie = await loadInfraEnv(ctx, principal(res), param(req, 'infra_env_id'));
    const name = q(req, 'file_name')!;
    if (name === 'static-network-config') return sendFile(res, name, Buffer.from((ie.doc.static_network_config as string | undefined) ?? '[]'));
    if (name === 'discovery.ign') return sendFile(res, name, Buffer.from(await infraEnvs.discoveryIgnitionFor(ctx, principal(res), ie.id)));
    if (name === 'ipxe-script') return sendFile(res, name, Buffer.from(await infraEnvs.ipxeScript(ctx, principal(res), ie.id)));
    throw conflict(`file_name: ${name} is not a file of an infra-env`);
  });

  // ---- hosts (user-facing)
  r.get('/v2/infra-envs/:infra_env_id/hosts', async (req, res) => {
    res.json((await hosts.listInfraEnvHosts(ctx, principal(res), param(req, 'infra_env_id'))).map(presentHost));
  });
  r.get('/v2/infra-envs/:infra_env_id/hosts/:host_id', async (req, res) => {
    res.json(presentHost(await hosts.getHost(ctx, principal(res), param(req, 'infra_env_id'), param(req, 'host_id'))));
  });
  r.patch('/v2/infra-envs/:infra_env_id/hosts/:host_id', async (req, res) => {
    res.status(201).json(presentHost(await hosts.updateHost(ctx, principal(res), param(req, 'infra_env_id'), param(req, 'host_id'), req.body ?? {}, rid(req))));
  });
  r.delete('/v2/infra-envs/:infra_env_id/hosts/:host_id', async (req, res) => {
    await hosts.deleteHost(ctx, principal(res), param(req, 'infra_env_id'), param(req, 'host_id'), rid(req));
    res.status(204).end();
  });

  // ---- agent
  r.post('/v2/infra-envs/:infra_env_id/hosts', async (req, res) => {
    const host = await agent.registerHost(ctx, principal(res), param(req, 'infra_env_id'), req.body, rid(req));
    res.status(201).json(presentRegistration(host));
  });
  r.get('/v2/infra-envs/:infra_env_id/hosts/:host_id/instructions', async (req, res) => {
    const ts = q(req, 'timestamp');
    const version = req.headers['discovery_agent_version'] ?? req.headers['discovery-agent-version'];
    res.json(await agent.nextSteps(ctx, principal(res), param(req, 'infra_env_id'), param(req, 'host_id'), ts !== undefined ? Number(ts) : undefined, typeof version === 'string' ? version : undefined));
  });
  r.post('/v2/infra-envs/:infra_env_id/hosts/:host_id/instructions', async (req, res) => {
    await agent.postStepReply(ctx, principal(res), param(req, 'infra_env_id'), param(req, 'host_id'), req.body, rid(req));
    res.status(204).end();
  });
  r.put('/v2/infra-envs/:infra_env_id/hosts/:host_id/progress', async (req, res) => {
    await agent.updateProgress(ctx, principal(res), param(req, 'infra_env_id'), param(req, 'host_id'), req.body, rid(req));
    res.status(200).end();
  });
  r.put('/v2/infra-envs/:infra_env_id/hosts/:host_id/logs-progress', async (req, res) => {
    await logs.updateHostLogsProgress(ctx, principal(res), param(req, 'infra_env_id'), param(req, 'host_id'), req.body.logs_state);
    res.status(204).end();
  });
  r.get('/v2/infra-env/:infra_env_id/hosts/:host_id/downloads/ignition', async (req, res) => {
    const f = await agent.hostIgnition(ctx, principal(res), param(req, 'infra_env_id'), param(req, 'host_id'));
    sendFile(res, f.fileName, f.body);
  });

  // ---- events
  r.get('/v2/events/stream', async (req, res) => {
    await streamEvents(ctx, principal(res), req, res);
  });
  r.get('/v2/events', async (req, res) => {
    const limit = q(req, 'limit');
    const offset = q(req, 'offset');
    const page = await events.listEvents(ctx, principal(res), {
      clusterId: q(req, 'cluster_id'),
      infraEnvId: q(req, 'infra_env_id'),
      // host_id is AS's deprecated single-host form of host_ids; the Python client still offers it.
      hostIds: mergeHostIds(qList(req, 'host_ids'), q(req, 'host_id')),
      severities: qList(req, 'severities') as Severity[] | undefined,
      categories: qList(req, 'categories'),
      message: q(req, 'message'),
      clusterLevel: qBool(req, 'cluster_level'),
      deletedHosts: qBool(req, 'deleted_hosts'),
      limit: limit !== undefined ? Number(limit) : undefined,
      offset: offset !== undefined ? Number(offset) : undefined,
      order: q(req, 'order') as 'ascending' | 'descending' | undefined,
    });
    res
      .setHeader('Event-Count', String(page.total))
      .setHeader('Severity-Count-Info', String(page.bySeverity.info))
      .setHeader('Severity-Count-Warning', String(page.bySeverity.warning))
      .setHeader('Severity-Count-Error', String(page.bySeverity.error))
      .setHeader('Severity-Count-Critical', String(page.bySeverity.critical))
      .json(page.events.map(presentEvent));
  });
  r.post('/v2/events', async (req, res) => {
    await events.triggerEvent(ctx, principal(res), req.body, rid(req));
    res.status(201).end();
  });

  bmcRoutes(r, ctx);
  return r;
}
