/** `landfall logs` and `landfall kubeconfig`: files a cluster's install produced. */
import { chmodSync, writeFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { resolveCluster } from '../api-client';
import { bytes, clientOf, printJson, withClientOptions, type ClientFlags } from '../output';
import { saveResponse } from '../transfer';
import { hostName } from './hosts';
import { CliError } from '../exit-codes';

export function logsCommand(): Command {
  return withClientOptions(
    new Command('logs')
      .description("download a cluster's collected logs as a tar.gz (host, controller or all)")
      .requiredOption('--cluster <cluster>', 'cluster id or name')
      .addOption(new Option('--type <type>', 'which logs').choices(['host', 'controller', 'all']).default('all'))
      .option('--host <host>', 'only this host (id or hostname; with --type host)')
      .option('-f, --file <path>', 'where to write the archive (default: <cluster>-logs-<type>.tar.gz)'),
  ).action(async (o: ClientFlags & { cluster: string; type: string; host?: string; file?: string }) => {
    const api = clientOf(o);
    const c = await resolveCluster(api, o.cluster);
    let hostId: string | undefined;
    if (o.host) {
      const h = (c.hosts ?? []).find((x: { id: string }) => x.id === o.host || hostName(x) === o.host);
      if (!h) throw new CliError('notFound', `cluster ${c.name} has no host "${o.host}"`);
      hostId = h.id;
    }
    const file = o.file ?? `${c.name}-logs-${o.type}.tar.gz`;
    const res = await api.fetch(`/clusters/${c.id}/logs`, { query: { logs_type: o.type, host_id: hostId } });
    const report = await saveResponse(res, file, { label: 'logs', progress: o.output === 'json' ? process.stderr : process.stdout, serviceUrl: o.url });
    if (o.output === 'json') return printJson({ cluster_id: c.id, logs_type: o.type, ...report });
    process.stdout.write(`wrote ${file}: ${bytes(report.bytes)} (list it with: tar tzf ${file})\n`);
  });
}

export function kubeconfigCommand(): Command {
  return withClientOptions(
    new Command('kubeconfig')
      .description("the admin kubeconfig of an installed cluster: printed, or written to a file readable only by you")
      .requiredOption('--cluster <cluster>', 'cluster id or name')
      .option('-f, --file <path>', 'write it here (mode 0600) instead of printing it'),
  ).action(async (o: ClientFlags & { cluster: string; file?: string }) => {
    const api = clientOf(o);
    const c = await resolveCluster(api, o.cluster);
    const res = await api.fetch(`/clusters/${c.id}/downloads/credentials`, { query: { file_name: 'kubeconfig' } });
    const text = await res.text();
    if (o.file) {
      try {
        writeFileSync(o.file, text, { mode: 0o600 });
        chmodSync(o.file, 0o600);
      } catch (err) {
        throw new CliError('usage', `cannot write ${o.file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      }
      if (o.output === 'json') return printJson({ cluster_id: c.id, file: o.file, bytes: Buffer.byteLength(text) });
      process.stdout.write(`wrote ${o.file}; try: KUBECONFIG=${o.file} kubectl get nodes\n`);
      return;
    }
    if (o.output === 'json') return printJson({ cluster_id: c.id, kubeconfig: text });
    process.stdout.write(text.endsWith('\n') ? text : text + '\n');
  });
}
