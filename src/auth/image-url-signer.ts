/**
 * Short presigned discovery-image URLs. A BMC's virtual-media field or an iPXE
 * line may cut a long URL, so the token is not a JWT but
 * `<expiry>.<image version>.<MAC>` in base36/base64url (about 35 characters):
 * the MAC is HMAC-SHA256 over the infra-env id, the image version and the
 * expiry, truncated to 128 bits. The infra-env id is in the URL's path and
 * is what the MAC binds, so a token for one infra-env opens no other.
 *
 * The key comes from IMAGE_URL_SECRET, or else is made once per deployment and
 * kept in PostgreSQL (table service_keys) so every API replica verifies what
 * any other signed, whatever AUTH_TYPE is.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Knex } from 'knex';

const MAC_BYTES = 16;
const KEY_NAME = 'image-url-hmac';

export interface ImageUrlClaims {
  infraEnvId: string;
  /** The infra-env's image version when the URL was made; a later change retires the URL. */
  version: number;
  /** Expiry, in whole seconds since the epoch. */
  expiresAt: number;
}

export class ImageUrlSigner {
  constructor(private readonly key: Buffer) {
    if (key.length < 32) throw new Error('the image URL key must be at least 32 bytes');
  }

  sign(c: ImageUrlClaims): string {
    return `${c.expiresAt.toString(36)}.${c.version.toString(36)}.${this.mac(c)}`;
  }

  /** The claims when the token is genuine, for this infra-env and not expired; otherwise undefined. */
  verify(token: string, infraEnvId: string, nowMs: number): ImageUrlClaims | undefined {
    const m = /^([0-9a-z]{1,12})\.([0-9a-z]{1,8})\.([A-Za-z0-9_-]{22})$/.exec(token);
    if (!m) return undefined;
    const claims = { infraEnvId, expiresAt: parseInt(m[1]!, 36), version: parseInt(m[2]!, 36) };
    const want = Buffer.from(this.mac(claims), 'base64url');
    const got = Buffer.from(m[3]!, 'base64url');
    if (got.length !== want.length || !timingSafeEqual(got, want)) return undefined;
    if (claims.expiresAt * 1000 <= nowMs) return undefined;
    return claims;
  }

  private mac(c: ImageUrlClaims): string {
    return createHmac('sha256', this.key).update(`landfall-image-url\n${c.infraEnvId}\n${c.version}\n${c.expiresAt}`).digest().subarray(0, MAC_BYTES).toString('base64url');
  }
}

/**
 * The deployment's image-URL key: the configured secret, or the one kept in
 * the database (made by whichever replica asks first; the others read it).
 */
export async function loadImageUrlKey(db: Knex, configured: string | undefined): Promise<Buffer> {
  if (configured) return Buffer.from(configured, 'utf8');
  await db('service_keys').insert({ name: KEY_NAME, value: randomBytes(32).toString('base64') }).onConflict('name').ignore();
  const row = (await db('service_keys').where({ name: KEY_NAME }).first()) as { value: string } | undefined;
  if (!row) throw new Error('the image URL key could not be stored');
  return Buffer.from(row.value, 'base64');
}
