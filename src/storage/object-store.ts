/**
 * Large artifacts (Ignition, PKI bundles, kubeconfigs, logs, base images) live
 * in object storage; PostgreSQL and Temporal only ever hold their keys.
 */
import type { Readable } from 'node:stream';

export interface ObjectInfo {
  key: string;
  sizeBytes: number;
  modifiedAt: Date;
}

export interface ObjectStore {
  /** A short description for logs and /readyz, never containing credentials. */
  readonly description: string;
  put(key: string, body: Buffer | string | Readable, contentType?: string): Promise<ObjectInfo>;
  /** Resolves to null when the key does not exist. */
  stat(key: string): Promise<ObjectInfo | null>;
  getStream(key: string): Promise<Readable>;
  /**
   * The object's bytes and their count, of one and the same version even if
   * the key is written again meanwhile (a tar entry must state its size before
   * its bytes). Resolves to null when the key does not exist.
   */
  open(key: string): Promise<{ stream: Readable; sizeBytes: number } | null>;
  getBuffer(key: string): Promise<Buffer>;
  delete(key: string): Promise<void>;
  list(prefix: string): Promise<ObjectInfo[]>;
  /** Throws when the store cannot be used right now. */
  ping(): Promise<void>;
}

/**
 * Keys are relative, slash-separated and never climb out of their root; this
 * is what keeps the local backend from becoming a path-traversal hole.
 */
export function assertValidKey(key: string): void {
  const ok =
    key.length > 0 &&
    key.length <= 1024 &&
    !key.startsWith('/') &&
    !key.includes('\\') &&
    !key.includes('\0') &&
    key.split('/').every((part) => part !== '' && part !== '.' && part !== '..');
  if (!ok) throw new Error(`invalid object key: ${JSON.stringify(key)}`);
}

export async function streamToBuffer(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks);
}
