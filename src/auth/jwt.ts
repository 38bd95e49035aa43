/**
 * ES256 JSON Web Tokens with node:crypto, enough for AUTH_TYPE=local: the
 * service signs user, agent and image tokens with one EC P-256 key and checks
 * them with its public half (`EC_PRIVATE_KEY_PEM` / `EC_PUBLIC_KEY_PEM`).
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';

export interface TokenClaims {
  sub?: string;
  /** Agent tokens: the one infra-env they may act for. */
  infra_env_id?: string;
  /** Controller tokens: the one cluster they may act for. */
  cluster_id?: string;
  /** What the token is for: user, agent, image. */
  use?: 'user' | 'agent' | 'image';
  admin?: boolean;
  /** Image tokens: the infra-env's image version they were made for; a change to the infra-env retires them. */
  image_version?: number;
  iat?: number;
  exp?: number;
}

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');
const HEADER = b64url(JSON.stringify({ alg: 'ES256', typ: 'JWT' }));

export class TokenError extends Error {}

export function generateEcKeyPair(): { privateKeyPem: string; publicKeyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

export class TokenSigner {
  private readonly privateKey: KeyObject | undefined;
  private readonly publicKey: KeyObject;

  constructor(keys: { privateKeyPem?: string; publicKeyPem?: string }) {
    this.privateKey = keys.privateKeyPem ? createPrivateKey(keys.privateKeyPem) : undefined;
    if (keys.publicKeyPem) this.publicKey = createPublicKey(keys.publicKeyPem);
    else if (this.privateKey) this.publicKey = createPublicKey(this.privateKey);
    else throw new Error('an EC public or private key is required');
    const details = this.publicKey.asymmetricKeyDetails;
    if (this.publicKey.asymmetricKeyType !== 'ec' || details?.namedCurve !== 'prime256v1') {
      throw new Error('the key must be an EC P-256 key (ES256)');
    }
  }

  sign(claims: TokenClaims, ttlSeconds?: number, now = Date.now()): string {
    if (!this.privateKey) throw new Error('no private key to sign tokens with');
    const iat = Math.floor(now / 1000);
    const body = { ...claims, iat, ...(ttlSeconds ? { exp: iat + ttlSeconds } : {}) };
    const input = `${HEADER}.${b64url(JSON.stringify(body))}`;
    // JOSE wants the raw r||s signature, not DER.
    const sig = sign('sha256', Buffer.from(input), { key: this.privateKey, dsaEncoding: 'ieee-p1363' });
    return `${input}.${b64url(sig)}`;
  }

  verify(token: string, now = Date.now()): TokenClaims {
    const parts = token.split('.');
    if (parts.length !== 3) throw new TokenError('malformed token');
    const [h, p, s] = parts as [string, string, string];
    let header: { alg?: string };
    let claims: TokenClaims;
    try {
      header = JSON.parse(Buffer.from(h, 'base64url').toString());
      claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    } catch {
      throw new TokenError('malformed token');
    }
    // Only ES256: never let the token choose a weaker algorithm (or "none").
    if (header.alg !== 'ES256') throw new TokenError('unsupported token algorithm');
    const ok = verify('sha256', Buffer.from(`${h}.${p}`), { key: this.publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(s, 'base64url'));
    if (!ok) throw new TokenError('invalid token signature');
    if (typeof claims !== 'object' || claims === null) throw new TokenError('malformed token');
    if (claims.exp !== undefined && claims.exp * 1000 < now) throw new TokenError('token expired');
    return claims;
  }
}
