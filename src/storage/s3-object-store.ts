import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import * as Minio from 'minio';
import { assertValidKey, streamToBuffer, type ObjectInfo, type ObjectStore } from './object-store';

export interface S3Settings {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region: string;
}

/** Where streamed uploads go before they are copied to their key (see put); list() leaves it out. */
const STAGING_PREFIX = '.staging/';
/**
 * A staging object is visible only once its upload completed, and is copied
 * and deleted within seconds of that: one older than this was left by a
 * process that died in between, and is deleted (sweepStaging).
 */
export const STAGING_MAX_AGE_MS = 60 * 60_000;

/** MinIO or any S3-compatible service through the minio client. */
export class S3ObjectStore implements ObjectStore {
  readonly description: string;
  private readonly client: Minio.Client;
  private bucketReady = false;
  private swept = false;

  constructor(private readonly s: S3Settings) {
    const url = new URL(s.endpoint);
    const useSSL = url.protocol === 'https:';
    this.client = new Minio.Client({
      endPoint: url.hostname,
      port: url.port ? Number(url.port) : useSSL ? 443 : 80,
      useSSL,
      accessKey: s.accessKey,
      secretKey: s.secretKey,
      region: s.region,
      pathStyle: true,
    });
    this.description = `s3:${url.host}/${s.bucket}`;
  }

  /** Creates the bucket on first use, so a fresh MinIO needs no manual step. */
  private async ensureBucket(): Promise<void> {
    if (this.bucketReady) return;
    const exists = await this.client.bucketExists(this.s.bucket);
    if (!exists) {
      try {
        await this.client.makeBucket(this.s.bucket, this.s.region);
      } catch (err) {
        // Another process may have created it between the check and the make.
        const code = (err as { code?: string }).code;
        if (code !== 'BucketAlreadyOwnedByYou' && code !== 'BucketAlreadyExists') throw err;
      }
    }
    this.bucketReady = true;
    if (!this.swept) {
      this.swept = true;
      // In the background: a process's first use of the store does not wait for it, and a failure costs only the space.
      this.sweepStaging().catch(() => undefined);
    }
  }

  /**
   * Deletes what streamed puts left under the staging prefix in processes that
   * died between an upload and its copy (older than `maxAgeMs`); how many.
   * Run once per process, at its first use of the store. Parts of uploads
   * that never completed are not objects: MinIO drops them after a day
   * itself; on AWS S3 a lifecycle rule (AbortIncompleteMultipartUpload) does.
   */
  async sweepStaging(maxAgeMs = STAGING_MAX_AGE_MS): Promise<number> {
    const before = Date.now() - maxAgeMs;
    const stale = (await this.objects(STAGING_PREFIX)).filter((o) => o.modifiedAt.getTime() <= before);
    for (const { key } of stale) await this.client.removeObject(this.s.bucket, key);
    return stale.length;
  }

  async put(key: string, body: Buffer | string | Readable, contentType = 'application/octet-stream'): Promise<ObjectInfo> {
    assertValidKey(key);
    await this.ensureBucket();
    if (!(body instanceof Readable)) {
      // One PUT: S3 makes the whole object visible at once, whoever else writes the key.
      await this.client.putObject(this.s.bucket, key, typeof body === 'string' ? Buffer.from(body) : body, undefined, { 'Content-Type': contentType });
      return (await this.stat(key))!;
    }
    // A stream of unknown length goes up as a multipart upload, and the minio
    // client resumes any upload already open under the same key: two processes
    // writing one key (both API replicas fetching the same base image at start)
    // then share one upload, and whichever completes second fails with "The
    // specified multipart upload does not exist". So each stream goes up under
    // a key of its own and is copied, server-side, to its key.
    const staging = `${STAGING_PREFIX}${randomUUID()}`;
    try {
      await this.client.putObject(this.s.bucket, staging, body, undefined, { 'Content-Type': contentType });
      await this.client.composeObject(
        new Minio.CopyDestinationOptions({ Bucket: this.s.bucket, Object: key }),
        [new Minio.CopySourceOptions({ Bucket: this.s.bucket, Object: staging })],
      );
    } catch (err) {
      // An upload that failed midway leaves its parts under the staging key, which no one will resume.
      await this.client.removeIncompleteUpload(this.s.bucket, staging).catch(() => undefined);
      throw err;
    } finally {
      await this.client.removeObject(this.s.bucket, staging).catch(() => undefined);
    }
    return (await this.stat(key))!;
  }

  async stat(key: string): Promise<ObjectInfo | null> {
    assertValidKey(key);
    await this.ensureBucket();
    try {
      const s = await this.client.statObject(this.s.bucket, key);
      return { key, sizeBytes: s.size, modifiedAt: s.lastModified };
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'NotFound' || code === 'NoSuchKey') return null;
      throw err;
    }
  }

  async getStream(key: string): Promise<Readable> {
    assertValidKey(key);
    await this.ensureBucket();
    return this.client.getObject(this.s.bucket, key);
  }

  async open(key: string): Promise<{ stream: Readable; sizeBytes: number } | null> {
    assertValidKey(key);
    await this.ensureBucket();
    try {
      const stream = await this.client.getObject(this.s.bucket, key);
      // The answer to this GET says how long its own body is; S3 serves one version to a GET from start to end.
      const length = Number((stream as Readable & { headers?: Record<string, string> }).headers?.['content-length']);
      if (Number.isFinite(length)) return { stream, sizeBytes: length };
      const info = await this.stat(key);
      if (!info) return null;
      return { stream, sizeBytes: info.sizeBytes };
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'NotFound' || code === 'NoSuchKey') return null;
      throw err;
    }
  }

  async getBuffer(key: string): Promise<Buffer> {
    return streamToBuffer(await this.getStream(key));
  }

  async delete(key: string): Promise<void> {
    assertValidKey(key);
    await this.ensureBucket();
    await this.client.removeObject(this.s.bucket, key);
  }

  async list(prefix: string): Promise<ObjectInfo[]> {
    await this.ensureBucket();
    return (await this.objects(prefix)).filter((o) => !o.key.startsWith(STAGING_PREFIX)).sort((a, b) => a.key.localeCompare(b.key));
  }

  /** Every object under a prefix, staging ones too (list leaves those out; sweepStaging wants only them). */
  private async objects(prefix: string): Promise<ObjectInfo[]> {
    const out: ObjectInfo[] = [];
    const stream = this.client.listObjectsV2(this.s.bucket, prefix, true);
    for await (const item of stream as AsyncIterable<Minio.BucketItem>) {
      if (item.name) out.push({ key: item.name, sizeBytes: item.size, modifiedAt: item.lastModified ?? new Date(0) });
    }
    return out;
  }

  async ping(): Promise<void> {
    this.bucketReady = false;
    await this.ensureBucket();
  }
}
