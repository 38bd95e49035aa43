/**
 * Pure checks of user input that a JSON schema cannot express (CIDR maths,
 * SSH key structure, pull-secret shape). Each returns a reason string when the
 * value is bad, undefined when it is fine, so the API can name field and rule.
 */
import { ipVersion, isIPv4 } from './ip-address';

export function cidrProblem(v: string): string | undefined {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(v);
  if (!m) return 'must be a CIDR such as 192.168.1.0/24';
  const [, ip, prefixText] = m as unknown as [string, string, string];
  const family = ipVersion(ip);
  if (!family) return `"${ip}" is not an IP address`;
  const prefix = Number(prefixText);
  if (prefix > (family === 4 ? 32 : 128)) return `prefix /${prefix} is too long for IPv${family}`;
  return undefined;
}

export function ipProblem(v: string): string | undefined {
  return ipVersion(v) ? undefined : 'must be an IPv4 or IPv6 address';
}

function ipToBigInt(ip: string): { value: bigint; bits: number } {
  if (isIPv4(ip)) return { value: ip.split('.').reduce((acc, o) => (acc << 8n) + BigInt(Number(o)), 0n), bits: 32 };
  // Expand "::" and any embedded IPv4 tail before reading 8 groups.
  let s = ip;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (v4) {
    const n = ipToBigInt(v4[1]!).value;
    s = s.slice(0, -v4[1]!.length) + `${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head, tail] = s.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const tl = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - tl.length).fill('0'), ...tl];
  return { value: groups.reduce((acc, g) => (acc << 16n) + BigInt(parseInt(g || '0', 16)), 0n), bits: 128 };
}

const V4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
function v4(ip: string): number | undefined {
  const m = V4.exec(ip);
  if (!m) return undefined;
  const o = [m[1], m[2], m[3], m[4]].map(Number);
  return o.every((x) => x <= 255) ? ((o[0]! << 24) | (o[1]! << 16) | (o[2]! << 8) | o[3]!) >>> 0 : undefined;
}

export function ipInCidr(ip: string, cidr: string): boolean {
  const [base, prefixText] = cidr.split('/') as [string, string];
  // The common case, IPv4, in 32-bit integers: refresh asks this n² times for a cluster.
  const ip4 = v4(ip);
  const base4 = ip4 === undefined ? undefined : v4(base);
  if (ip4 !== undefined && base4 !== undefined) {
    const prefix = Number(prefixText);
    const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
    return ((ip4 & mask) >>> 0) === ((base4 & mask) >>> 0);
  }
  if (!ipVersion(ip) || ipVersion(ip) !== ipVersion(base)) return false;
  const a = ipToBigInt(ip);
  const b = ipToBigInt(base);
  const shift = BigInt(a.bits - Number(prefixText));
  return a.value >> shift === b.value >> shift;
}

/** AS's hostname rule (host-update-params): RFC 1123 labels, lower case, not a localhost name. */
const HOSTNAME = /^[a-z0-9][a-z0-9-]{0,62}(?:[.][a-z0-9-]{1,63})*$/;
const FORBIDDEN_HOSTNAMES = new Set(['localhost', 'localhost.localdomain', 'localhost4', 'localhost4.localdomain4', 'localhost6', 'localhost6.localdomain6']);

export function hostnameProblem(v: string): string | undefined {
  if (v.length > 63) return 'must be at most 63 characters';
  if (!HOSTNAME.test(v)) return 'must be lower-case letters, digits, "-" and ".", starting with a letter or digit';
  if (FORBIDDEN_HOSTNAMES.has(v)) return `"${v}" is not allowed`;
  return undefined;
}

export function baseDomainProblem(v: string): string | undefined {
  if (v.length > 253) return 'must be at most 253 characters';
  const labels = v.split('.');
  if (labels.length < 2) return 'must have at least two labels, for example example.com';
  if (!labels.every((l) => /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i.test(l))) return 'must be a DNS domain such as example.com';
  return undefined;
}

/** Cluster names become DNS labels (api.<name>.<base>). */
export function clusterNameProblem(v: string): string | undefined {
  if (v.length < 1 || v.length > 54) return 'must be 1 to 54 characters';
  // A DNS label (RFC 1123), as the document's pattern and assisted-service allow: "0" and "1-edge" are names.
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(v)) return 'must be lower-case letters, digits and "-", starting and ending with a letter or digit';
  return undefined;
}

const SSH_KEY_TYPES = new Set([
  'ssh-rsa',
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'sk-ssh-ed25519@openssh.com',
  'sk-ecdsa-sha2-nistp256@openssh.com',
]);

/** One or more authorized_keys lines; the base64 blob must really encode the named key type. */
export function sshKeyProblem(v: string): string | undefined {
  const lines = v.split('\n').map((l) => l.trim()).filter(Boolean);
  if (!lines.length) return 'must be an SSH public key such as "ssh-ed25519 AAAA… user@host"';
  for (const line of lines) {
    const [type, blob] = line.split(/\s+/);
    if (!type || !SSH_KEY_TYPES.has(type)) return `unsupported SSH key type "${type ?? ''}"`;
    if (!blob || !/^[A-Za-z0-9+/]+={0,2}$/.test(blob)) return 'the key data is not base64';
    const raw = Buffer.from(blob, 'base64');
    const len = raw.length >= 4 ? raw.readUInt32BE(0) : -1;
    if (len <= 0 || len + 4 > raw.length || raw.subarray(4, 4 + len).toString() !== type) return `the key data does not encode a ${type} key`;
  }
  return undefined;
}

/** A pull secret is a JSON object with an `auths` object, as registries expect. */
export function pullSecretProblem(v: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch {
    return 'must be JSON';
  }
  const auths = (parsed as { auths?: unknown })?.auths;
  if (typeof auths !== 'object' || auths === null || Array.isArray(auths)) return 'must be a JSON object with an "auths" object';
  for (const [registry, entry] of Object.entries(auths as Record<string, unknown>)) {
    if (typeof entry !== 'object' || entry === null) return `auths["${registry}"] must be an object`;
  }
  return undefined;
}

export function cidrsOverlap(a: string, b: string): boolean {
  const [ab, ap] = a.split('/') as [string, string];
  const [bb, bp] = b.split('/') as [string, string];
  if (ipVersion(ab) !== ipVersion(bb)) return false;
  const shorter = Number(ap) <= Number(bp) ? a : b;
  const other = shorter === a ? bb : ab;
  return ipInCidr(other, shorter);
}

/** The dotted path of the first string (or key) holding a NUL character, or undefined. */
export function nulField(value: unknown, at: string, depth = 0): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? at : undefined;
  if (depth > 64 || value === null || typeof value !== 'object') return undefined;
  for (const [k, v] of Object.entries(value)) {
    if (k.includes('\u0000')) return `${at}.${k.split('\u0000').join('\\u0000')}`;
    const found = nulField(v, Array.isArray(value) ? `${at}[${k}]` : `${at}.${k}`, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/**
 * A JSON document that arrived inside a string field (a step's output, an
 * event's props) with a NUL in it: PostgreSQL stores none, and a stored one
 * fails every later read of what holds it (an inventory's hostname failed
 * every refresh of its cluster). The field and the rule, or undefined.
 */
export function nulProblem(parsed: unknown, field: string): { field: string; reason: string } | undefined {
  const at = nulField(parsed, field);
  return at === undefined ? undefined : { field: at, reason: `${at}: must not contain a NUL (\\u0000) character` };
}
