/**
 * Which IP version a string is, read as node's net.isIP reads it (dotted quad
 * without leading zeros; IPv6 with at most one "::", an optional IPv4 tail and
 * an optional %zone). Here because domain code may not import node:net, a
 * socket module (the purity lint); test/unit/ip-address.test.ts holds the two
 * to the same answers.
 */
export function ipVersion(s: string): 0 | 4 | 6 {
  if (isIPv4(s)) return 4;
  if (isIPv6(s)) return 6;
  return 0;
}

export function isIPv4(s: string): boolean {
  const parts = s.split('.');
  return parts.length === 4 && parts.every((p) => /^(0|[1-9]\d{0,2})$/.test(p) && Number(p) <= 255);
}

export function isIPv6(s: string): boolean {
  let addr = s;
  const pct = addr.indexOf('%');
  if (pct >= 0) {
    if (!/^[0-9a-zA-Z.:-]+$/.test(addr.slice(pct + 1))) return false;
    addr = addr.slice(0, pct);
  }
  // An IPv4 tail stands for the last two groups.
  const lastColon = addr.lastIndexOf(':');
  const tail = addr.slice(lastColon + 1);
  if (lastColon >= 0 && tail.includes('.')) {
    if (!isIPv4(tail)) return false;
    addr = `${addr.slice(0, lastColon + 1)}0:0`;
  }
  const halves = addr.split('::');
  if (halves.length > 2) return false;
  const groups = (h: string) => (h === '' ? [] : h.split(':'));
  const all = halves.flatMap(groups);
  if (!all.every((g) => /^[0-9a-fA-F]{1,4}$/.test(g))) return false;
  return halves.length === 2 ? all.length <= 7 : all.length === 8;
}
