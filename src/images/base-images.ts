/**
 * The base live ISOs discovery images are made from: a catalogue per release
 * and CPU architecture (`base_images` in the release catalogue), each fetched
 * once from its URL, checked against its sha256, kept in object storage (so
 * other replicas and the next start do not fetch it again) and on this
 * machine's disk (the ISO is streamed with positional reads, which object
 * storage cannot serve at disk speed). BASE_ISO_PATH, when set, serves every
 * release and architecture the catalogue does not name; after it, Landfall's
 * own discovery OS (DISCOVERY_OS_ISO, which `landfall dev` sets to the one
 * scripts/build-discovery-os.sh built) serves the architectures it was built
 * for (x86_64).
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { mkdir, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { AppError } from '../errors';
import type { BaseImageSource, ReleaseCatalogue } from '../domain/releases';
import type { ObjectStore } from '../storage';

export interface BaseImagesOptions {
  releases: ReleaseCatalogue;
  store: ObjectStore;
  cacheDir: string;
  fallbackPath: string | undefined;
  /** Landfall's own discovery OS by CPU architecture ({x86_64: live.iso}): used when neither the catalogue nor fallbackPath names an image. */
  defaults?: Record<string, string>;
  logger?: Logger;
  /** How long fetching one image from its URL may take before it counts as failed. */
  fetchTimeoutMs?: number;
}

export class BaseImages {
  private readonly inflight = new Map<string, Promise<string>>();

  constructor(private readonly o: BaseImagesOptions) {}

  /** Whether a base image is configured for a release and architecture (fetched or not yet). */
  has(release: string | undefined, arch: string | undefined): boolean {
    return Boolean(release && arch && this.o.releases[release]?.base_images?.[arch]) || Boolean(this.o.fallbackPath) || Boolean(arch && this.o.defaults?.[arch]);
  }

  /** The local file of the image for a release and architecture, fetched first if this machine does not have it yet. */
  async imageFor(release: string | undefined, arch: string | undefined): Promise<string> {
    const src = release && arch ? this.o.releases[release]?.base_images?.[arch] : undefined;
    if (!src) {
      if (this.o.fallbackPath) return this.o.fallbackPath;
      const own = arch ? this.o.defaults?.[arch] : undefined;
      if (own) return own;
      throw new AppError('not_found', `no base image is configured for release ${release ?? '(none)'} on ${arch ?? '(none)'}: name one under base_images in RELEASES_FILE, or set BASE_ISO_PATH${this.o.defaults ? ` (Landfall's discovery OS is built for ${Object.keys(this.o.defaults).join(', ')} only)` : ''}`);
    }
    const name = cacheName(release!, arch!, src);
    const file = path.join(this.o.cacheDir, name);
    if (existsSync(file)) return file;
    let p = this.inflight.get(name);
    if (!p) {
      // One fetch per image however many downloads ask for it at once.
      p = this.fetch(name, file, src).finally(() => this.inflight.delete(name));
      this.inflight.set(name, p);
    }
    return p;
  }

  /** Fetches every catalogued image in the background (at API start), so the first download need not wait. */
  warm(logger: Logger | undefined = this.o.logger): void {
    for (const [release, r] of Object.entries(this.o.releases)) {
      for (const arch of Object.keys(r.base_images ?? {})) {
        // A failure here is logged and tried again by the first download that needs the image.
        this.imageFor(release, arch).catch((err: unknown) => logger?.warn({ release, arch, err: (err as Error).message }, 'base image could not be fetched yet'));
      }
    }
  }

  private async fetch(name: string, file: string, src: BaseImageSource): Promise<string> {
    await mkdir(this.o.cacheDir, { recursive: true });
    const key = `base-images/${name}`;
    const tmp = `${file}.${process.pid}.${Date.now()}.part`;
    try {
      const stored = await this.o.store.stat(key).catch(() => null);
      if (stored) {
        const { sha256, bytes } = await copyHashing(await this.o.store.getStream(key), tmp);
        if (!src.sha256 || sha256 === src.sha256) {
          await rename(tmp, file);
          this.o.logger?.info({ image: name, bytes }, 'base image copied from object storage');
          return file;
        }
        // A stale or damaged copy in storage: fetch from the source again and replace it.
        this.o.logger?.warn({ image: name }, 'base image in object storage does not match its sha256; fetching it again');
      }
      const { sha256, bytes } = await copyHashing(await openSource(src.url, this.o.fetchTimeoutMs ?? 30 * 60_000), tmp);
      if (src.sha256 && sha256 !== src.sha256) {
        throw new AppError('dependency_unavailable', `the base image ${name} from ${redactUrl(src.url)} does not match its sha256 (expected ${src.sha256}, got ${sha256})`);
      }
      await this.o.store.put(key, createReadStream(tmp), 'application/x-iso9660-image');
      await rename(tmp, file);
      this.o.logger?.info({ image: name, bytes, url: redactUrl(src.url) }, 'base image fetched and stored');
      return file;
    } catch (err) {
      await unlink(tmp).catch(() => undefined);
      if (err instanceof AppError) throw err;
      throw new AppError('dependency_unavailable', `the base image ${name} could not be fetched from ${redactUrl(src.url)}: ${(err as Error).message}`);
    }
  }
}

/** A file name that changes whenever the image does (its digest, or else its URL). */
function cacheName(release: string, arch: string, src: BaseImageSource): string {
  const id = src.sha256 ?? createHash('sha256').update(src.url).digest('hex');
  return `${release}-${arch}-${id.slice(0, 16)}.iso`;
}

async function openSource(url: string, timeoutMs: number): Promise<Readable> {
  if (url.startsWith('file://')) return createReadStream(fileURLToPath(url));
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  if (res.status !== 200 || !res.body) throw new Error(`the server answered ${res.status}`);
  return Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>);
}

async function copyHashing(from: Readable, to: string): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      bytes += chunk.length;
      cb(null, chunk);
    },
  });
  await pipeline(from, tap, createWriteStream(to));
  return { sha256: hash.digest('hex'), bytes };
}

/** URLs may carry credentials (user:password@, signed query strings); messages show neither. */
function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(unparseable URL)';
  }
}
