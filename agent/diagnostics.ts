/**
 * Why an agent cannot reach the service, in words an operator at the console
 * can act on. Today the cause of a host that never registers is visible on
 * neither side; the agent writes this to its console and status file, and
 * uploads it as an event on its first successful contact.
 */
export interface Diagnosis {
  code: 'dns' | 'refused' | 'timeout' | 'tls-ca' | 'tls-clock' | 'tls-name' | 'unauthorized' | 'not-found' | 'proxy' | 'server-error' | 'network' | 'clock-skew';
  what: string;
  detail: string;
  fix: string;
}

interface ErrLike {
  code?: string;
  message?: string;
  cause?: ErrLike;
}

function rootCode(err: unknown): { code?: string; message: string } {
  let e = err as ErrLike | undefined;
  let message = e?.message ?? String(err);
  for (let depth = 0; e && depth < 5; depth++) {
    if (typeof e.code === 'string' && e.code !== 'UND_ERR_SOCKET' && !e.code.startsWith('ERR_INVALID')) return { code: e.code, message: e.message ?? message };
    message = e.message ?? message;
    e = e.cause;
  }
  return { message };
}

/** Diagnoses a failed request: a thrown network/TLS error, or an HTTP status. */
export function diagnose(serviceUrl: string, failure: { error?: unknown; status?: number; body?: string }, usingProxy: string | undefined): Diagnosis {
  const url = new URL(serviceUrl);
  const target = `${url.hostname}:${url.port || (url.protocol === 'https:' ? 443 : 80)}`;
  if (failure.status !== undefined) {
    const s = failure.status;
    if (s === 401 || s === 403)
      return { code: 'unauthorized', what: `the service at ${serviceUrl} refused this agent's token (HTTP ${s})`, detail: failure.body?.slice(0, 200) ?? '', fix: 'the discovery image was made for another Landfall service or an infra-env that was re-created; download a fresh image from the infra-env and boot it' };
    if (s === 404)
      return { code: 'not-found', what: `the service does not know this agent's infra-env (HTTP 404)`, detail: failure.body?.slice(0, 200) ?? '', fix: 'the infra-env was deleted or the image belongs to another service; download a fresh image' };
    if (s === 407) return { code: 'proxy', what: `the proxy ${usingProxy ?? ''} requires authentication (HTTP 407)`, detail: '', fix: 'set proxy credentials in the infra-env proxy settings (http://user:password@proxy:port)' };
    return { code: 'server-error', what: `the service answered HTTP ${s}`, detail: failure.body?.slice(0, 200) ?? '', fix: 'the service is unhealthy; check its /readyz and logs. The agent keeps retrying.' };
  }
  const { code, message } = rootCode(failure.error);
  switch (code) {
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return { code: 'dns', what: `cannot resolve ${url.hostname}`, detail: message, fix: `check the DNS servers this host got (cat /etc/resolv.conf) and that ${url.hostname} resolves from its network` };
    case 'ECONNREFUSED':
      return { code: 'refused', what: `connection to ${target} refused`, detail: message, fix: `nothing listens at ${target}: check the service is running, the port in the service URL, and firewalls between this host and the service` };
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return { code: 'timeout', what: `no route or no answer from ${target}`, detail: message, fix: 'check this host has an address and a default route (ip addr, ip route) and that the service network is reachable' };
    case 'CERT_HAS_EXPIRED':
    case 'CERT_NOT_YET_VALID':
      return { code: 'tls-clock', what: `the service's TLS certificate is ${code === 'CERT_NOT_YET_VALID' ? 'not valid yet' : 'expired'} according to this host's clock (${new Date().toISOString()})`, detail: message, fix: "this host's clock is probably wrong: set the BIOS clock or configure NTP sources in the infra-env; otherwise renew the service certificate" };
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
      return { code: 'tls-name', what: `the service's TLS certificate does not name ${url.hostname}`, detail: message, fix: 'use the host name the certificate was issued for in the service URL (SERVICE_BASE_URL), or reissue the certificate' };
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
    case 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY':
    case 'UNABLE_TO_GET_ISSUER_CERT':
      return { code: 'tls-ca', what: `this host does not trust the service's TLS certificate (${code})`, detail: message, fix: "add the CA that signed the service certificate to the infra-env's additional_trust_bundle and download a fresh image" };
    default:
      if (/proxy/i.test(message)) return { code: 'proxy', what: `the proxy ${usingProxy ?? ''} failed`, detail: message, fix: 'check the proxy URL in the infra-env and that the proxy can reach the service' };
      return { code: 'network', what: `cannot reach ${target}`, detail: message, fix: 'check cabling, addresses and routes of this host' };
  }
}

export function formatDiagnosis(d: Diagnosis): string {
  return `landfall-agent: cannot reach the service: ${d.what}\n  detail: ${d.detail || '-'}\n  fix: ${d.fix}`;
}
