/**
 * The discovery OS's Ignition applier: a small subset of Ignition spec 3,
 * enough for what Landfall's discovery Ignition (src/domain/discovery-ignition.ts)
 * and simple `ignition_config_override`s carry. It runs once at boot, from the
 * OS's /init, with the Debian node inside the image (Node 18: no newer APIs).
 *
 *   node ignition-apply.js (--config FILE | --url URL) [--root DIR] [--run-dir DIR] [--skip-services]
 *
 * What it does:
 * - ignition.version must be 3.x; anything else is refused (exit 2).
 * - storage.directories: created (mode).
 * - storage.files: contents.source as a data: URL (base64 or percent-encoded)
 *   or http(s) (fetched; contents.verification.hash sha256/sha512 checked when
 *   given), contents.compression "gzip", append[] (same sources), mode,
 *   overwrite (false: an existing file is an error, as in Ignition).
 * - storage.links: symbolic links (hard: false only).
 * - systemd.units: contents written to /etc/systemd/system/NAME. Busybox init
 *   runs no systemd units, so every enabled *.service with an ExecStart is
 *   translated into a runner script RUN_DIR/services/NAME.sh that reads its
 *   EnvironmentFile= and Environment= lines and execs ExecStart; /init hands
 *   the runners to busybox init, which respawns them (Restart=, RestartSec=
 *   honoured by the runner's delay). Other unit types, drop-ins and
 *   [Unit]/[Install] ordering are ignored with a warning. --skip-services
 *   (the installed OS applying a role Ignition whose units run kubeadm, which
 *   the image does not have) writes the units but makes no runners; the
 *   report lists them as skippedServices.
 * - passwd.users: sshAuthorizedKeys written to ~NAME/.ssh/authorized_keys
 *   (root's for "root", /home/NAME otherwise). The image has no SSH server, so
 *   nobody can log in with them yet: a stated limit.
 * - NetworkManager keyfiles (/etc/NetworkManager/system-connections/*.nmconnection,
 *   however they were written) become RUN_DIR/network/mac-<mac> or
 *   if-<name> scripts that /init runs for the matching NIC instead of DHCP:
 *   method=manual (addressN=, gatewayN/gateway=, routeN=, dns=, mtu=),
 *   method=auto (DHCP for IPv4, kernel SLAAC for IPv6), method=disabled.
 * - NTP servers in /etc/chrony.d/*.conf (`server X`) are listed in
 *   RUN_DIR/ntp-servers for busybox ntpd.
 *
 * Not supported (warned and skipped): storage.disks/raid/filesystems/luks,
 * ignition.config.merge/replace, file owners (everything is root's), hard
 * links, systemd dropins, passwd groups and password hashes, kernelArguments.
 */
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, unlinkSync, writeFileSync, appendFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';

type Json = Record<string, unknown>;

export class IgnitionError extends Error {}

export interface ApplyOptions {
  /** Where the system's / is (tests use a temporary directory). */
  root: string;
  /** Where runner scripts and network scripts go (an absolute path on the system the applier runs on). */
  runDir: string;
  /** Where the runners append their services' output; /var/log/landfall unless a test says otherwise. */
  logDir?: string;
  /** Fetches an http(s) source; injected by tests. */
  fetchBytes?: (url: string) => Promise<Buffer>;
  warn?: (msg: string) => void;
  /** Write enabled units but run none of them (listed in the report's skippedServices). */
  skipServices?: boolean;
}

export interface ApplyReport {
  files: string[];
  services: string[];
  skippedServices: string[];
  networkProfiles: string[];
  warnings: string[];
}

/** Decodes a data: URL (RFC 2397): `data:[mediatype][;base64],payload`. */
export function decodeDataUrl(url: string): Buffer {
  const m = /^data:([^,]*),(.*)$/s.exec(url);
  if (!m) throw new IgnitionError(`not a data URL: ${url.slice(0, 40)}`);
  const meta = m[1]!;
  const payload = m[2]!;
  if (/;base64$/i.test(meta)) return Buffer.from(decodeURIComponent(payload), 'base64');
  // Percent-decoding on bytes: %XX may spell UTF-8 sequences or raw bytes.
  const bytes: number[] = [];
  for (let i = 0; i < payload.length; i++) {
    const c = payload[i]!;
    if (c === '%' && /^[0-9a-fA-F]{2}$/.test(payload.slice(i + 1, i + 3))) {
      bytes.push(parseInt(payload.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(c, 'utf8'));
    }
  }
  return Buffer.from(bytes);
}

async function defaultFetch(url: string): Promise<Buffer> {
  let last: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(60_000) });
      if (res.status !== 200) throw new Error(`HTTP ${res.status}`);
      return Buffer.from(await res.arrayBuffer());
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, 2000 * (attempt + 1)));
    }
  }
  throw new IgnitionError(`could not fetch ${url}: ${(last as Error).message}`);
}

async function resourceBytes(res: Json, o: ApplyOptions, what: string): Promise<Buffer> {
  const source = res.source;
  let data: Buffer;
  if (source === undefined || source === null) data = Buffer.alloc(0);
  else if (typeof source !== 'string') throw new IgnitionError(`${what}: source must be a string`);
  else if (source.startsWith('data:')) data = decodeDataUrl(source);
  else if (/^https?:\/\//.test(source)) data = await (o.fetchBytes ?? defaultFetch)(source);
  else throw new IgnitionError(`${what}: only data: and http(s) sources are supported (got ${source.split(':')[0]}:)`);
  const verification = res.verification as Json | undefined;
  if (typeof verification?.hash === 'string') {
    const [algo, want] = verification.hash.split('-', 2) as [string, string];
    if (algo !== 'sha256' && algo !== 'sha512') throw new IgnitionError(`${what}: unsupported hash ${algo}`);
    const got = createHash(algo).update(data).digest('hex');
    if (got !== want) throw new IgnitionError(`${what}: ${algo} mismatch (expected ${want}, got ${got})`);
  }
  if (res.compression === 'gzip') data = gunzipSync(data);
  else if (res.compression) throw new IgnitionError(`${what}: unsupported compression ${String(res.compression)}`);
  return data;
}

const inRoot = (root: string, p: string) => {
  if (!p.startsWith('/')) throw new IgnitionError(`paths must be absolute (got ${p})`);
  const out = path.join(root, path.normalize(p));
  if (!out.startsWith(path.resolve(root))) throw new IgnitionError(`path escapes the root: ${p}`);
  return out;
};

/** Shell-quotes one word. */
const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Splits an ExecStart= value as systemd does for the common cases: whitespace, single and double quotes, backslash escapes. */
export function splitCommandLine(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quote: string | undefined;
  let has = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"' && i + 1 < line.length) cur += line[++i];
      else cur += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      has = true;
    } else if (c === '\\' && i + 1 < line.length) {
      cur += line[++i];
      has = true;
    } else if (/\s/.test(c)) {
      if (has || cur) out.push(cur);
      cur = '';
      has = false;
    } else {
      cur += c;
      has = true;
    }
  }
  if (quote) throw new IgnitionError(`unterminated quote in ${line}`);
  if (has || cur) out.push(cur);
  return out;
}

/** The [Service] keys of a unit file we honour (the last ExecStart wins, as only one is allowed for Type=simple). */
export function parseServiceUnit(contents: string): { execStart?: string[]; environment: string[]; environmentFiles: Array<{ path: string; optional: boolean }>; restart: string; restartSec: number; type: string } {
  let section = '';
  const r = { execStart: undefined as string[] | undefined, environment: [] as string[], environmentFiles: [] as Array<{ path: string; optional: boolean }>, restart: 'no', restartSec: 0.1, type: 'simple' };
  // Continuation lines (trailing backslash) joined first.
  for (const raw of contents.replace(/\\\n/g, ' ').split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || line.startsWith(';')) continue;
    const sec = /^\[(.+)\]$/.exec(line);
    if (sec) {
      section = sec[1]!;
      continue;
    }
    if (section !== 'Service') continue;
    const kv = /^([A-Za-z]+)\s*=\s*(.*)$/.exec(line);
    if (!kv) continue;
    const [, key, value] = kv as unknown as [string, string, string];
    if (key === 'ExecStart') r.execStart = value ? splitCommandLine(value.replace(/^[-@+!:]+/, '')) : undefined;
    else if (key === 'Environment') r.environment.push(...splitCommandLine(value));
    else if (key === 'EnvironmentFile') r.environmentFiles.push({ path: value.replace(/^-/, ''), optional: value.startsWith('-') });
    else if (key === 'Restart') r.restart = value;
    else if (key === 'RestartSec') r.restartSec = Number.parseFloat(value) || 0;
    else if (key === 'Type') r.type = value;
  }
  return r;
}

/** The runner script busybox init starts for one service. */
export function runnerScript(name: string, unit: ReturnType<typeof parseServiceUnit>, logDir: string, stampDir: string): string {
  const restarts = unit.restart === 'always' || unit.restart === 'on-failure' || unit.restart === 'on-abnormal';
  const lines = [
    '#!/bin/sh',
    `# ${name}, translated from its systemd unit by ignition-apply (busybox init respawns this script).`,
    // systemd's default PATH for services.
    'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  ];
  if (restarts) {
    // A respawn after the first start waits RestartSec, as systemd would.
    lines.push(`if [ -e ${sq(`${stampDir}/${name}.started`)} ]; then sleep ${Math.max(1, Math.ceil(unit.restartSec))}; fi`, `touch ${sq(`${stampDir}/${name}.started`)}`);
  } else {
    // Restart=no: run once; later respawns by init park here.
    lines.push(`if [ -e ${sq(`${stampDir}/${name}.started`)} ]; then exec sleep 2147483647; fi`, `touch ${sq(`${stampDir}/${name}.started`)}`);
  }
  for (const f of unit.environmentFiles) {
    lines.push(
      `if [ -r ${sq(f.path)} ]; then`,
      `  while IFS= read -r line || [ -n "$line" ]; do case "$line" in ''|'#'*|';'*) ;; *=*) export "$line" ;; esac; done < ${sq(f.path)}`,
      ...(f.optional ? ['fi'] : [`else echo ${sq(`${name}: EnvironmentFile ${f.path} is missing`)} >&2; exit 1; fi`]),
    );
  }
  for (const e of unit.environment) lines.push(`export ${sq(e)}`);
  const cmd = (unit.execStart ?? []).map(sq).join(' ');
  lines.push(`mkdir -p ${sq(logDir)}`, `echo "$(date -Iseconds) ${name} starting" >> ${sq(`${logDir}/${name}.log`)}`);
  // Output goes to the console (serial logs) and to a file the agent's logs gather can read.
  lines.push(`${cmd} 2>&1 | tee -a ${sq(`${logDir}/${name}.log`)}`, '');
  return lines.join('\n');
}

/** Reads a NetworkManager keyfile into sections. */
export function parseKeyfile(text: string): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  let cur: Record<string, string> | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const sec = /^\[(.+)\]$/.exec(line);
    if (sec) {
      cur = out[sec[1]!] ??= {};
      continue;
    }
    const i = line.indexOf('=');
    if (cur && i > 0) cur[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}

/**
 * The shell commands that configure one NIC ($IFACE) from a keyfile, and the
 * file name that says which NIC it is for: mac-<aa:bb:…> or if-<name>.
 * The first line is "# dhcp4" when IPv4 wants DHCP.
 */
export function networkScript(text: string): { file: string; script: string } | undefined {
  const k = parseKeyfile(text);
  const conn = k.connection ?? {};
  if (conn.type && conn.type !== 'ethernet' && conn.type !== '802-3-ethernet') return undefined;
  if (conn.autoconnect === 'false') return undefined;
  const mac = (k.ethernet?.['mac-address'] ?? k['802-3-ethernet']?.['mac-address'])?.toLowerCase();
  const ifname = conn['interface-name'];
  if (!mac && !ifname) return undefined;
  const file = mac ? `mac-${mac}` : `if-${ifname}`;
  const lines: string[] = [];
  const v4 = k.ipv4 ?? {};
  const v6 = k.ipv6 ?? {};
  lines.push(`# ${(v4.method ?? 'auto') === 'auto' ? 'dhcp4' : 'static4'}`);
  const mtu = k.ethernet?.mtu ?? k['802-3-ethernet']?.mtu;
  if (mtu && /^\d+$/.test(mtu)) lines.push(`ip link set dev "$IFACE" mtu ${mtu}`);
  lines.push('ip link set dev "$IFACE" up');
  const word = (s: string) => {
    if (!/^[0-9a-fA-F.:/]+$/.test(s)) throw new IgnitionError(`${file}: "${s}" is not an address`);
    return s;
  };
  for (const [fam, sec] of [['-4', v4], ['-6', v6]] as const) {
    if (sec.method === 'disabled' || sec.method === 'ignore') {
      if (fam === '-6') lines.push('echo 1 > "/proc/sys/net/ipv6/conf/$IFACE/disable_ipv6" 2>/dev/null || true');
      continue;
    }
    if (sec.method !== 'manual') continue;
    let gateway = sec.gateway;
    for (const [key, value] of Object.entries(sec)) {
      const addr = /^address(\d*)$/.exec(key);
      if (addr) {
        const [a, gw] = value.split(',');
        lines.push(`ip ${fam} addr add ${word(a!)} dev "$IFACE"`);
        if (gw && !gateway) gateway = gw;
      }
    }
    if (gateway) lines.push(`ip ${fam} route replace default via ${word(gateway)} dev "$IFACE"`);
    for (const [key, value] of Object.entries(sec)) {
      if (!/^route\d*$/.test(key)) continue;
      const [dest, via, metric] = value.split(',');
      lines.push(`ip ${fam} route replace ${word(dest!)}${via ? ` via ${word(via)}` : ''} dev "$IFACE"${metric && /^\d+$/.test(metric) ? ` metric ${metric}` : ''}`);
    }
    for (const d of (sec.dns ?? '').split(';').filter(Boolean)) lines.push(`echo nameserver ${word(d)} >> /etc/resolv.conf`);
  }
  return { file, script: lines.join('\n') + '\n' };
}

function writeFileAt(dest: string, data: Buffer, mode: number | undefined): void {
  mkdirSync(path.dirname(dest), { recursive: true });
  if (existsSync(dest)) unlinkSync(dest);
  writeFileSync(dest, data, { mode: mode ?? 0o644 });
  chmodSync(dest, mode ?? 0o644);
}

export async function applyIgnition(config: Json, o: ApplyOptions): Promise<ApplyReport> {
  const report: ApplyReport = { files: [], services: [], skippedServices: [], networkProfiles: [], warnings: [] };
  const warn = (m: string) => {
    report.warnings.push(m);
    o.warn?.(m);
  };
  const version = String((config.ignition as Json | undefined)?.version ?? '');
  if (!/^3\.\d+\.\d+/.test(version)) throw new IgnitionError(`Ignition config version ${version || '(none)'} is not 3.x`);
  const ign = config.ignition as Json;
  const cfgRef = ign.config as Json | undefined;
  if (cfgRef && ((cfgRef.merge as unknown[] | undefined)?.length || cfgRef.replace)) warn('ignition.config.merge/replace is not supported: ignored');
  if (config.kernelArguments) warn('kernelArguments is not supported in the live system: ignored');

  const storage = (config.storage ?? {}) as Json;
  for (const k of ['disks', 'raid', 'filesystems', 'luks']) if ((storage[k] as unknown[] | undefined)?.length) warn(`storage.${k} is not supported: ignored`);
  for (const d of (storage.directories ?? []) as Json[]) {
    const dest = inRoot(o.root, String(d.path));
    mkdirSync(dest, { recursive: true });
    if (typeof d.mode === 'number') chmodSync(dest, d.mode);
  }
  for (const f of (storage.files ?? []) as Json[]) {
    const p = String(f.path);
    const dest = inRoot(o.root, p);
    if (f.user || f.group) warn(`${p}: file owners are not supported: owned by root`);
    const exists = existsSync(dest);
    if (exists && f.overwrite !== true && f.contents) throw new IgnitionError(`${p} exists and overwrite is not true`);
    let data = f.contents ? await resourceBytes(f.contents as Json, o, p) : exists ? readFileSync(dest) : Buffer.alloc(0);
    for (const [i, a] of ((f.append ?? []) as Json[]).entries()) data = Buffer.concat([data, await resourceBytes(a, o, `${p} append[${i}]`)]);
    writeFileAt(dest, data, typeof f.mode === 'number' ? f.mode : undefined);
    report.files.push(p);
  }
  for (const l of (storage.links ?? []) as Json[]) {
    const dest = inRoot(o.root, String(l.path));
    if (l.hard) {
      warn(`${String(l.path)}: hard links are not supported: skipped`);
      continue;
    }
    mkdirSync(path.dirname(dest), { recursive: true });
    if (existsSync(dest)) unlinkSync(dest);
    symlinkSync(String(l.target), dest);
  }

  const passwd = (config.passwd ?? {}) as Json;
  for (const u of (passwd.users ?? []) as Json[]) {
    const keys = (u.sshAuthorizedKeys ?? []) as string[];
    if (!keys.length) continue;
    const name = String(u.name);
    if (!/^[a-z_][a-z0-9_-]*$/.test(name)) throw new IgnitionError(`bad user name ${name}`);
    const home = name === 'root' ? '/root' : `/home/${name}`;
    writeFileAt(inRoot(o.root, `${home}/.ssh/authorized_keys`), Buffer.from(keys.join('\n') + '\n'), 0o600);
    warn(`passwd.users ${name}: SSH keys written to ${home}/.ssh/authorized_keys, but this image runs no SSH server`);
  }
  if ((passwd.groups as unknown[] | undefined)?.length) warn('passwd.groups is not supported: ignored');

  const units = (((config.systemd ?? {}) as Json).units ?? []) as Json[];
  const servicesDir = path.join(o.runDir, 'services');
  mkdirSync(servicesDir, { recursive: true });
  for (const u of units) {
    const name = String(u.name);
    if (!/^[A-Za-z0-9@._:-]+$/.test(name)) throw new IgnitionError(`bad unit name ${name}`);
    if (typeof u.contents === 'string') writeFileAt(inRoot(o.root, `/etc/systemd/system/${name}`), Buffer.from(u.contents), 0o644);
    if ((u.dropins as unknown[] | undefined)?.length) warn(`${name}: drop-ins are not supported: ignored`);
    if (u.enabled !== true || u.mask) continue;
    if (!name.endsWith('.service')) {
      warn(`${name}: only .service units are run: ignored`);
      continue;
    }
    const contents = typeof u.contents === 'string' ? u.contents : (() => {
      const onDisk = inRoot(o.root, `/etc/systemd/system/${name}`);
      return existsSync(onDisk) ? readFileSync(onDisk, 'utf8') : '';
    })();
    const unit = parseServiceUnit(contents);
    if (o.skipServices) {
      report.skippedServices.push(name);
      continue;
    }
    if (!unit.execStart?.length) {
      warn(`${name}: enabled but has no ExecStart: ignored`);
      continue;
    }
    writeFileSync(path.join(servicesDir, `${name}.sh`), runnerScript(name, unit, o.logDir ?? '/var/log/landfall', path.join(o.runDir, 'services')), { mode: 0o755 });
    report.services.push(name);
  }

  // Static network: every keyfile present now, whether it came from this config or the image.
  const nmDir = inRoot(o.root, '/etc/NetworkManager/system-connections');
  const netDir = path.join(o.runDir, 'network');
  mkdirSync(netDir, { recursive: true });
  if (existsSync(nmDir)) {
    for (const f of readdirSync(nmDir).sort()) {
      if (!f.endsWith('.nmconnection')) continue;
      const s = networkScript(readFileSync(path.join(nmDir, f), 'utf8'));
      if (!s) {
        warn(`${f}: not an ethernet profile matched by MAC or interface name: ignored`);
        continue;
      }
      writeFileSync(path.join(netDir, s.file), s.script, { mode: 0o644 });
      report.networkProfiles.push(s.file);
    }
  }

  const chronyDir = inRoot(o.root, '/etc/chrony.d');
  if (existsSync(chronyDir)) {
    const servers = readdirSync(chronyDir)
      .filter((f) => f.endsWith('.conf'))
      .flatMap((f) => [...readFileSync(path.join(chronyDir, f), 'utf8').matchAll(/^\s*(?:server|pool)\s+(\S+)/gm)].map((m) => m[1]!));
    if (servers.length) writeFileSync(path.join(o.runDir, 'ntp-servers'), servers.join('\n') + '\n');
  }
  return report;
}

async function main(argv: string[]): Promise<void> {
  const arg = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const file = arg('--config');
  const url = arg('--url');
  let text: string;
  if (file) text = readFileSync(file, 'utf8');
  else if (url) text = (await defaultFetch(url)).toString('utf8');
  else throw new IgnitionError('usage: ignition-apply (--config FILE | --url URL) [--root DIR] [--run-dir DIR]');
  let config: Json;
  try {
    config = JSON.parse(text) as Json;
  } catch (err) {
    throw new IgnitionError(`the Ignition config is not JSON: ${(err as Error).message}`);
  }
  const runDir = arg('--run-dir') ?? '/run/landfall';
  const report = await applyIgnition(config, { root: arg('--root') ?? '/', runDir, skipServices: argv.includes('--skip-services'), warn: (m) => process.stderr.write(`ignition-apply: warning: ${m}\n`) });
  appendFileSync(path.join(runDir, 'ignition-report.json'), JSON.stringify(report) + '\n');
  process.stdout.write(`ignition-apply: ${report.files.length} files, services: ${report.services.join(' ') || 'none'}${report.skippedServices.length ? ` (not run: ${report.skippedServices.join(' ')})` : ''}, network profiles: ${report.networkProfiles.join(' ') || 'none'}\n`);
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`ignition-apply: ${(err as Error).message}\n`);
    process.exit(err instanceof IgnitionError ? 2 : 1);
  });
}
