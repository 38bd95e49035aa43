/**
 * BMC credentials at rest: AES-256-GCM, a fresh 96-bit nonce per value, the
 * BMC record's id as associated data (a ciphertext copied onto another record
 * does not open). Stored as `v1.<nonce>.<ciphertext+tag>` in base64url.
 *
 * The key is BMC_CREDENTIALS_KEY (32 bytes, base64 or hex), or else one made
 * once per deployment and kept in PostgreSQL (service_keys), as the
 * image-URL key is, so every API replica and worker opens what another sealed.
 * Kept in the database, the key protects against a leaked backup of the
 * bmc_hosts table alone; set BMC_CREDENTIALS_KEY from a secret store to
 * protect against a leaked database too.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { BmcCredentials } from './driver';

const KEY_NAME = 'bmc-credentials-aes256gcm';

export class CredentialsBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the BMC credentials key must be 32 bytes (AES-256)');
  }

  seal(c: BmcCredentials, recordId: string): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    cipher.setAAD(Buffer.from(`landfall-bmc\n${recordId}`));
    const body = Buffer.concat([cipher.update(JSON.stringify({ u: c.username, p: c.password })), cipher.final(), cipher.getAuthTag()]);
    return `v1.${nonce.toString('base64url')}.${body.toString('base64url')}`;
  }

  open(sealed: string, recordId: string): BmcCredentials {
    const m = /^v1\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]+)$/.exec(sealed);
    if (!m) throw new Error(`the stored credentials of BMC record ${recordId} are not in a known format`);
    const body = Buffer.from(m[2]!, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(m[1]!, 'base64url'));
    decipher.setAAD(Buffer.from(`landfall-bmc\n${recordId}`));
    decipher.setAuthTag(body.subarray(body.length - 16));
    try {
      const plain = Buffer.concat([decipher.update(body.subarray(0, body.length - 16)), decipher.final()]).toString('utf8');
      const o = JSON.parse(plain) as { u: string; p: string };
      return { username: o.u, password: o.p };
    } catch {
      throw new Error(`the stored credentials of BMC record ${recordId} do not open with this key (was BMC_CREDENTIALS_KEY changed?)`);
    }
  }
}

/** BMC_CREDENTIALS_KEY as 32 bytes: 44 characters of base64 or 64 hex digits. */
export function parseCredentialsKey(v: string): Buffer {
  const key = /^[0-9a-f]{64}$/i.test(v) ? Buffer.from(v, 'hex') : Buffer.from(v, 'base64');
  if (key.length !== 32) throw new Error('must be 32 bytes, as 64 hex digits or base64 (openssl rand -base64 32)');
  return key;
}

/** The configured key, or the deployment's own (made by whichever process asks first; the others read it). */
export async function loadCredentialsKey(db: Knex, configured: Buffer | undefined): Promise<Buffer> {
  if (configured) return configured;
  await db('service_keys').insert({ name: KEY_NAME, value: randomBytes(32).toString('base64') }).onConflict('name').ignore();
  const row = (await db('service_keys').where({ name: KEY_NAME }).first()) as { value: string } | undefined;
  if (!row) throw new Error('the BMC credentials key could not be stored');
  return Buffer.from(row.value, 'base64');
}
