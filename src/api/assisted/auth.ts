import type { RequestHandler } from 'express';
import type { Principal } from '../../auth/principal';
import { TokenError, type TokenClaims, type TokenSigner } from '../../auth/jwt';

/**
 * Authenticates a request against the security requirements its OpenAPI
 * operation declares (userAuth, agentAuth, urlAuth, imageAuth): the first
 * credential present that the operation accepts decides who the caller is.
 * AUTH_TYPE=none makes every caller an administrator, as in AS.
 */
type Scheme = 'userAuth' | 'agentAuth' | 'urlAuth' | 'imageAuth';

interface OpenApiReq {
  openapi?: { schema?: { security?: Array<Record<string, unknown>> } };
}

function infraError(status: 401 | 403, message: string) {
  return { code: status, message };
}

function toPrincipal(scheme: Scheme, c: TokenClaims): Principal | undefined {
  // ?api_key carries a user's or an agent's token for downloads without headers; either way the
  // token has exactly the rights it has in its own header (every urlAuth operation also takes both).
  if (scheme === 'urlAuth' && c.use === 'user') return toPrincipal('userAuth', c);
  if (scheme === 'userAuth') {
    if (c.use && c.use !== 'user') return undefined;
    if (!c.sub) return undefined;
    return c.admin ? { kind: 'admin', user: c.sub } : { kind: 'user', user: c.sub };
  }
  if (scheme === 'imageAuth') {
    return c.use === 'image' && c.infra_env_id ? { kind: 'image', infraEnvId: c.infra_env_id } : undefined;
  }
  // agentAuth and urlAuth carry agent tokens scoped to one infra-env (or one cluster, for the controller).
  if (c.use && c.use !== 'agent') return undefined;
  if (c.infra_env_id) return { kind: 'agent', infraEnvId: c.infra_env_id };
  if (c.cluster_id) return { kind: 'agent', clusterId: c.cluster_id };
  return undefined;
}

function credential(req: Parameters<RequestHandler>[0], scheme: Scheme): string | undefined {
  switch (scheme) {
    case 'userAuth': {
      const h = req.headers.authorization;
      return h && /^Bearer\s+/i.test(h) ? h.replace(/^Bearer\s+/i, '').trim() : undefined;
    }
    case 'agentAuth':
      return (req.headers['x-secret-key'] as string | undefined) || undefined;
    case 'urlAuth':
      return typeof req.query.api_key === 'string' ? req.query.api_key : undefined;
    case 'imageAuth':
      return (req.headers['image-token'] as string | undefined) || (typeof req.query.image_token === 'string' ? req.query.image_token : undefined);
  }
}

/** The header that hands an agent its renewed token; the upstream Go agent ignores it (its token lives as long as its image). */
export const RENEWED_AGENT_TOKEN_HEADER = 'X-Landfall-Agent-Token';

/**
 * An agent token past half its life is renewed on any agent call: the same
 * scope, a fresh expiry. Hosts that keep polling never lose their access;
 * a token copied off a host that stopped polling dies at its expiry.
 */
function renewal(scheme: Scheme, c: TokenClaims, signer: TokenSigner, ttlSeconds: number | undefined, nowMs: number): string | undefined {
  if (scheme !== 'agentAuth' || !ttlSeconds || c.exp === undefined) return undefined;
  if (c.exp * 1000 - nowMs > (ttlSeconds * 1000) / 2) return undefined;
  const { iat: _iat, exp: _exp, ...scope } = c;
  return signer.sign(scope, ttlSeconds, nowMs);
}

/**
 * An agent token (X-Secret-Key) as `authenticate` judges it for an operation
 * whose only scheme is agentAuth: the principal and, past half its life, the
 * renewed token; undefined when it is refused (the caller then lets
 * `authenticate` answer the 401). For the agent fast path.
 */
export function agentPrincipal(token: string, signer: TokenSigner, ttlSeconds: number | undefined, nowMs: number): { principal: Principal; renewed?: string } | undefined {
  let claims: TokenClaims;
  try {
    claims = signer.verify(token);
  } catch {
    return undefined;
  }
  const principal = toPrincipal('agentAuth', claims);
  return principal ? { principal, renewed: renewal('agentAuth', claims, signer, ttlSeconds, nowMs) } : undefined;
}

export function authenticate(authType: 'none' | 'local', signer: TokenSigner | undefined, defaultSecurity: Array<Record<string, unknown>>, opts: { agentTokenTtlSeconds?: number } = {}): RequestHandler {
  return (req, res, next) => {
    if (authType === 'none') {
      res.locals.principal = { kind: 'admin', user: '' } satisfies Principal;
      return next();
    }
    const security = (req as OpenApiReq).openapi?.schema?.security ?? defaultSecurity;
    if (security.length === 0) {
      res.locals.principal = { kind: 'admin', user: '' } satisfies Principal;
      return next();
    }
    const schemes = security.flatMap((s) => Object.keys(s)) as Scheme[];
    let sawInvalid: string | undefined;
    for (const scheme of schemes) {
      const token = credential(req, scheme);
      if (!token) continue;
      try {
        const claims = signer!.verify(token);
        const principal = toPrincipal(scheme, claims);
        if (principal) {
          res.locals.principal = principal;
          const renewed = renewal(scheme, claims, signer!, opts.agentTokenTtlSeconds, Date.now());
          if (renewed) res.setHeader(RENEWED_AGENT_TOKEN_HEADER, renewed);
          return next();
        }
        sawInvalid = 'the token is not valid for this operation';
      } catch (err) {
        sawInvalid = err instanceof TokenError ? err.message : 'invalid token';
      }
    }
    res.status(401).json(infraError(401, sawInvalid ?? `missing credentials: this operation accepts ${schemes.join(' or ')}`));
  };
}
