/** `landfall infraenv create|list` and `landfall iso download`. */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { resolveCluster, resolveInfraEnv, unreachable, httpError, type Json } from '../api-client';
import { bytes, clientOf, duration, printFields, printJson, printTable, withClientOptions, type ClientFlags } from '../output';
import { partialSize, saveResponse } from '../transfer';
import { readTextFile } from './clusters';

interface CreateFlags extends ClientFlags {
  cluster: string;
  name?: string;
  imageType: string;
  sshKeyFile?: string;
  pullSecretFile?: string;
  proxy?: string;
  httpProxy?: string;
  httpsProxy?: string;
  noproxy?: string;
}

export function infraEnvCommand(): Command {
  const ie = new Command('infraenv').alias('infra-env').description('create and list infra-envs (what a discovery image boots hosts into)');

  withClientOptions(
    ie
      .command('create')
      .description("create an infra-env bound to a cluster; its discovery image registers hosts with that cluster")
      .requiredOption('--cluster <cluster>', 'cluster id or name')
      .option('--name <name>', 'infra-env name (default: <cluster>-infra-env)')
      .addOption(new Option('--image-type <type>', 'discovery image').choices(['full-iso', 'minimal-iso']).default('full-iso'))
      .option('--ssh-key-file <file>', 'public SSH key to reach discovered hosts')
      .option('--pull-secret-file <file>', 'registry pull secret JSON (default: an empty one)')
      .option('--proxy <url>', 'HTTP and HTTPS proxy for the discovered hosts')
      .option('--http-proxy <url>', 'HTTP proxy (overrides --proxy)')
      .option('--https-proxy <url>', 'HTTPS proxy (overrides --proxy)')
      .option('--noproxy <list>', 'comma-separated domains, addresses or CIDRs that bypass the proxy'),
  ).action(async (o: CreateFlags) => {
    const api = clientOf(o);
    const cluster = await resolveCluster(api, o.cluster);
    const body: Json = {
      name: o.name ?? `${cluster.name}-infra-env`,
      cluster_id: cluster.id,
      openshift_version: cluster.openshift_version,
      image_type: o.imageType,
      pull_secret: o.pullSecretFile ? readTextFile('--pull-secret-file', o.pullSecretFile) : '{"auths":{}}',
    };
    if (o.sshKeyFile) body.ssh_authorized_key = readTextFile('--ssh-key-file', o.sshKeyFile);
    const http = o.httpProxy ?? o.proxy;
    const https = o.httpsProxy ?? o.proxy;
    if (http || https || o.noproxy) body.proxy = { ...(http ? { http_proxy: http } : {}), ...(https ? { https_proxy: https } : {}), ...(o.noproxy ? { no_proxy: o.noproxy } : {}) };
    const created = (await api.json('POST', '/infra-envs', { body })).body;
    if (o.output === 'json') return printJson(created);
    printFields([
      ['id', created.id],
      ['name', created.name],
      ['cluster', `${cluster.name} (${cluster.id})`],
      ['image type', created.type],
      ['proxy', created.proxy ? JSON.stringify(created.proxy) : undefined],
    ]);
    process.stdout.write(`next: landfall iso download --infra-env ${created.id}\n`);
  });

  withClientOptions(ie.command('list').alias('ls').description('list infra-envs').option('--cluster <cluster>', 'only those of this cluster (id or name)')).action(async (o: ClientFlags & { cluster?: string }) => {
    const api = clientOf(o);
    const clusterId = o.cluster ? (await resolveCluster(api, o.cluster)).id : undefined;
    const list = await api.get<Json[]>('/infra-envs', { cluster_id: clusterId });
    if (o.output === 'json') return printJson(list);
    printTable(['NAME', 'ID', 'CLUSTER', 'IMAGE'], list.map((x) => [x.name, x.id, x.cluster_id, x.type]));
  });

  return ie;
}

interface Resume {
  url: string;
  expires_at: string;
  etag?: string;
}

export function isoCommand(): Command {
  const iso = new Command('iso').description('discovery images');
  withClientOptions(
    iso
      .command('download')
      .description('download the discovery ISO of an infra-env (resumes an interrupted download of the same image URL)')
      .requiredOption('--infra-env <infra-env>', 'infra-env id or name')
      .option('-f, --file <path>', 'where to write the image (default: <infra-env name>.iso)'),
  ).action(async (o: ClientFlags & { infraEnv: string; file?: string }) => {
    const api = clientOf(o);
    const ie = await resolveInfraEnv(api, o.infraEnv);
    const file = o.file ?? `${ie.name}.iso`;
    const meta = `${file}.part.json`;
    // An image URL's bytes are only stable while its token lives (the embedded Ignition carries a signed agent token), so a resume reuses the URL it started with.
    let resume: Resume | undefined;
    const have = partialSize(file);
    if (have > 0 && existsSync(meta)) {
      try {
        const r = JSON.parse(readFileSync(meta, 'utf8')) as Resume;
        if (Date.parse(r.expires_at) - Date.now() > 60_000 && r.url.includes(`/images/${ie.id}/`)) resume = r;
      } catch {
        resume = undefined;
      }
    }
    const link = resume ?? (await api.get<Resume>(`/infra-envs/${ie.id}/downloads/image-url`));
    const headers: Record<string, string> = resume && resume.etag ? { Range: `bytes=${have}-`, 'If-Range': resume.etag } : {};
    let res: Response;
    try {
      // The image URL authenticates with its own image token; the bearer token is not sent to it.
      res = await fetch(link.url, { headers });
    } catch (err) {
      throw unreachable(err, new URL(link.url).origin);
    }
    if (!res.ok) {
      if (res.status === 416) rmSync(meta, { force: true });
      throw await httpError(res);
    }
    writeFileSync(meta, JSON.stringify({ url: link.url, expires_at: link.expires_at, etag: res.headers.get('etag') ?? undefined } satisfies Resume));
    const progress = o.output === 'json' ? process.stderr : process.stdout;
    const report = await saveResponse(res, file, { label: 'iso', progress, serviceUrl: o.url, resumeFrom: resume ? have : 0, resumable: true });
    rmSync(meta, { force: true });
    if (o.output === 'json') return printJson({ infra_env_id: ie.id, ...report });
    process.stdout.write(`wrote ${file}: ${bytes(report.bytes)}${report.resumed_from ? ` (resumed at ${bytes(report.resumed_from)})` : ''} in ${duration(report.seconds) ?? '0s'}\n`);
  });
  return iso;
}
