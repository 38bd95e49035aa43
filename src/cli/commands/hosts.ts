/** `landfall hosts --cluster X`: what each host is, where it stands, and what to fix. */
import { Argument, Command } from 'commander';
import { hostsAdd, type AddFlags } from './hosts-add';
import { resolveCluster, type Json } from '../api-client';
import { bytes, clientOf, printJson, table, withClientOptions, type ClientFlags } from '../output';

export interface FailingValidation {
  id: string;
  message?: string;
  cause?: string;
  hint?: string;
  blocking?: boolean;
}

function parseJson(s: unknown): Json {
  if (typeof s !== 'string' || !s) return undefined;
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}

export function hostName(h: Json): string {
  return h.requested_hostname ?? parseJson(h.inventory)?.hostname ?? String(h.id).slice(0, 8);
}

export function hostRole(h: Json): string {
  const role = h.role && h.role !== 'auto-assign' ? h.role : h.suggested_role ? `${h.suggested_role}*` : 'auto-assign';
  return h.bootstrap ? `${role} (bootstrap)` : role;
}

/** Failing validations with their remediation: `validations_info` says what failed, `validation_remediation` why and what to do. */
export function failingValidations(h: Json): FailingValidation[] {
  const info = (parseJson(h.validations_info) ?? {}) as Record<string, Array<{ id: string; status: string; message: string }>>;
  const remediation = (parseJson(h.validation_remediation) ?? {}) as Record<string, { cause?: string; hint?: string; blocking?: boolean }>;
  const out: FailingValidation[] = [];
  for (const list of Object.values(info)) for (const v of list) if (v.status === 'failure') out.push({ id: v.id, message: v.message, ...remediation[v.id] });
  for (const [id, r] of Object.entries(remediation)) if (!out.some((v) => v.id === id)) out.push({ id, ...r });
  return out;
}

export function hardware(h: Json): { cpu?: number; ram?: number; disk?: number } {
  const inv = parseJson(h.inventory);
  if (!inv) return {};
  const disks = (inv.disks ?? []) as Array<{ size_bytes?: number; path?: string; id?: string }>;
  const install = disks.find((d) => h.installation_disk_path && (d.path === h.installation_disk_path || d.id === h.installation_disk_id));
  return { cpu: inv.cpu?.count, ram: inv.memory?.physical_bytes, disk: install?.size_bytes ?? Math.max(0, ...disks.map((d) => d.size_bytes ?? 0)) };
}

export function hostsTable(hosts: Json[]): string {
  const rows = [...hosts]
    .sort((a, b) => hostName(a).localeCompare(hostName(b)))
    .map((h) => {
      const hw = hardware(h);
      const stage = h.progress?.current_stage ? `${h.progress.current_stage}${h.progress.installation_percentage !== undefined ? ` ${h.progress.installation_percentage}%` : ''}` : undefined;
      return { h, row: [hostName(h), hostRole(h), h.status, hw.cpu, bytes(hw.ram), bytes(hw.disk), stage, failingValidations(h).length || '-'] };
    });
  let out = table(
    ['HOSTNAME', 'ROLE', 'STATUS', 'CPU', 'RAM', 'DISK', 'STAGE', 'FAILING'],
    rows.map((r) => r.row),
  );
  if (hosts.some((h) => !h.role || h.role === 'auto-assign')) out += '(* the role the service suggests for an auto-assign host)\n';
  const problems = rows.filter(({ h }) => failingValidations(h).length || ['error', 'insufficient', 'disconnected', 'installing-pending-user-action'].includes(h.status));
  for (const { h } of problems) {
    out += `\n${hostName(h)} (${h.status}): ${h.status_info ?? ''}\n`;
    for (const v of failingValidations(h)) {
      out += `  ✗ ${v.id}${v.blocking === false ? ' (warning)' : ''}: ${v.cause ?? v.message ?? ''}\n`;
      if (v.hint) out += `    fix: ${v.hint}\n`;
    }
  }
  return out;
}

export function hostsCommand(): Command {
  return withClientOptions(
    new Command('hosts')
      .description('the hosts of a cluster: role, status, CPU/RAM/disk, install stage, and failing validations with their remediation; `hosts add` grows an installed cluster (day 2)')
      // An action argument rather than a subcommand: commander hands a parent's options (--cluster) to the parent, not to its subcommand.
      .addArgument(new Argument('[action]', 'add: open an installed cluster for new hosts, give its day-2 image, list, install and follow new hosts').choices(['add']))
      .requiredOption('--cluster <cluster>', 'cluster id or name')
      .option('--install', 'add: install every new host that is ready (known), each on its own')
      .option('-w, --wait', 'add --install: follow the new hosts until each is installed (exit 0) or one fails (exit 1)')
      .option('--pull-secret-file <file>', 'add: pull secret of the day-2 infra-env when it is made (default: an empty one)'),
  ).action(async (action: string | undefined, o: ClientFlags & { cluster: string }) => {
    const api = clientOf(o);
    const c = await resolveCluster(api, o.cluster);
    if (action === 'add') return hostsAdd(o as AddFlags, c);
    const hosts = await api.get<Json[]>(`/clusters/${c.id}/hosts`);
    if (o.output === 'json') return printJson(hosts);
    if (!hosts.length) {
      process.stdout.write(`cluster ${c.name} has no hosts yet: boot machines from its discovery image (landfall iso download)\n`);
      return;
    }
    process.stdout.write(hostsTable(hosts));
  });
}
