/**
 * GET/HEAD /images/:infraEnvId/{full,minimal}.iso — the discovery ISO: the base
 * live ISO (BASE_ISO_PATH) streamed with the infra-env's discovery Ignition in
 * its embed area, and for the minimal ISO kernel arguments that fetch the
 * rootfs from Landfall. The URL is what `downloads/image-url` hands out; with
 * AUTH_TYPE=local it carries an image token (`?image_token=`), and a missing,
 * forged, expired or foreign token gets the very answer an unknown infra-env
 * gets (404), so the URL reveals nothing.
 *
 * Consistency across Range requests: the embedded Ignition carries an agent
 * token, and ES256 signatures differ on every signing, so the area's bytes for
 * one image URL are made once and kept (in this process) while that URL's
 * token lives; chunked downloads of one URL get one consistent image.
 */
import { Router, type NextFunction, type Request, type Response } from 'express';
import { statSync, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import type { Principal } from '../auth/principal';
import { AppError, notFound } from '../errors';
import type { ServiceContext } from '../services/context';
import { baseImageOf, bootArtifactUrl, discoveryIgnitionFor } from '../services/infra-envs-service';
import { EmbedAreaError, ignitionAreaBytes, kargsPatches, minimalIsoKargs, readIsoLayout, type IsoLayout, type Patch } from '../iso/embed-area';
import { downloadStarting, patchedEtag, sendExtent, sendPatchedFile } from '../iso/stream';
import { IsoImage } from '../iso/iso9660';
import { applyKernelArguments, type KernelArgument } from '../domain/kernel-arguments';
import type { InfraEnvRow } from '../db/rows';
import { errorBody, notFoundHandler } from './errors';

const IMAGE_SERVICE: Principal = { kind: 'admin', user: 'landfall-image-service' };
const FILE = /^(full|minimal)\.iso$/;
/** Patched areas kept for range consistency; one is the size of the embed area (256 KiB on CoreOS). */
const MAX_CACHED = 64;

export interface ImageRoutesDeps {
  services: ServiceContext;
}

interface CachedPatches {
  expiresAt: number;
  patches: Promise<Patch[]>;
}

export function imageRoutes(deps: ImageRoutesDeps): Router {
  const ctx = deps.services;
  const router = Router();
  let layoutCache: { key: string; layout: Promise<IsoLayout> } | undefined;
  const patchCache = new Map<string, CachedPatches>();

  const layoutOf = (fh: FileHandle, st: { dev: number; ino: number; size: number; mtimeMs: number }): Promise<IsoLayout> => {
    const key = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
    if (layoutCache?.key !== key) {
      const layout = readIsoLayout(fh);
      layout.catch(() => undefined);
      layoutCache = { key, layout };
    }
    return layoutCache.layout;
  };

  /**
   * The infra-env when the URL's image token is good for it: genuine, not
   * expired, and made since the infra-env last changed (a change retires the
   * URLs handed out before: they would no longer carry what the user
   * configured). Anything else gets the unknown-infra-env answer.
   */
  const checkToken = async (req: Request, infraEnvId: string): Promise<{ token: string; exp: number; ie: InfraEnvRow }> => {
    const token = typeof req.query.image_token === 'string' ? req.query.image_token : '';
    const claims = (await ctx.imageUrlSigner()).verify(token, infraEnvId, ctx.now().getTime());
    if (claims) {
      const ie = await ctx.repos.infraEnvs.get(infraEnvId);
      if (ie && claims.version === Number((ie.doc as Record<string, unknown>).image_version ?? 0)) return { token, exp: claims.expiresAt * 1000, ie };
    }
    throw notFound(`infra-env ${infraEnvId}`);
  };

  /** The base image of the infra-env's release and architecture (fetched into the cache on first use). */
  const baseImageFor = (ie: InfraEnvRow) => {
    const { release, arch } = baseImageOf(ie);
    return ctx.baseImages.imageFor(release, arch);
  };

  const buildPatches = async (ie: InfraEnvRow, type: string, layout: IsoLayout): Promise<Patch[]> => {
    const ignition = await discoveryIgnitionFor(ctx, IMAGE_SERVICE, ie.id);
    const patches: Patch[] = [{ offset: layout.ignition.offset, data: ignitionAreaBytes(ignition, layout.ignition.length) }];
    const d = ie.doc as Record<string, unknown>;
    const ops = (d.kernel_arguments as KernelArgument[] | undefined) ?? [];
    if (type === 'minimal') {
      if (!layout.kargs) throw new EmbedAreaError('the image has no kernel-argument embed area (no /coreos/kargs.json), so no minimal ISO can be made from it');
      patches.push(...kargsPatches(layout, applyKernelArguments(minimalIsoKargs(layout.kargs.default, bootArtifactUrl(ctx, ie, 'rootfs.img')), ops)));
    } else if (ops.length) {
      if (!layout.kargs) throw new EmbedAreaError('the image has no kernel-argument embed area (no /coreos/kargs.json), so the kernel_arguments cannot be applied');
      patches.push(...kargsPatches(layout, applyKernelArguments(layout.kargs.default, ops)));
    }
    return patches;
  };

  const patchesFor = (ie: InfraEnvRow, type: string, layoutKey: string, layout: IsoLayout, token: { token: string; exp: number }): Promise<Patch[]> => {
    const now = ctx.now().getTime();
    for (const [k, v] of patchCache) if (v.expiresAt <= now) patchCache.delete(k);
    const key = `${layoutKey}|${type}|${token.token}`;
    const hit = patchCache.get(key);
    if (hit) return hit.patches;
    const patches = buildPatches(ie, type, layout);
    patchCache.set(key, { expiresAt: token.exp, patches });
    // A failure (unknown infra-env, config too large) is not kept.
    patches.catch(() => patchCache.delete(key));
    while (patchCache.size > MAX_CACHED) patchCache.delete(patchCache.keys().next().value!);
    return patches;
  };

  /**
   * The live system's parts inside a base image, for the minimal ISO (rootfs)
   * and PXE (kernel, initrd, rootfs). They are the same for every infra-env of
   * a release and architecture and carry nothing of the user's, so they need
   * no token (AS's boot-artifacts answer the same way): a minimal ISO booted
   * long after its URL expired still finds its rootfs. Paths are the ISO 9660
   * (8.3, upper-case) names, as coreos-installer looks them up.
   */
  const ARTIFACTS: Record<string, { path: string; type: string }> = {
    'rootfs.img': { path: 'IMAGES/PXEBOOT/ROOTFS.IMG', type: 'application/octet-stream' },
    'vmlinuz': { path: 'IMAGES/PXEBOOT/VMLINUZ', type: 'application/octet-stream' },
    'initrd.img': { path: 'IMAGES/PXEBOOT/INITRD.IMG', type: 'application/octet-stream' },
  };
  router.get('/images/boot-artifacts/:release/:arch/:file', asDownload(async (req, res, next, started) => {
    const artifact = ARTIFACTS[String(req.params.file)];
    const release = String(req.params.release);
    const arch = String(req.params.arch);
    if (!artifact || !ctx.releases[release]?.cpu_architectures.includes(arch)) return notFoundHandler(req, res, next);
    const { fh, st } = await baseImageFile(await ctx.baseImages.imageFor(release, arch));
    const entry = await (await IsoImage.open(fh)).find(artifact.path);
    if (!entry || entry.directory) {
      res.status(404).json(errorBody(404, `the base image of ${release} (${arch}) has no ${artifact.path}`));
      return;
    }
    await sendExtent(req, res, { fh, offset: entry.offset, length: entry.length, etag: `"${st.ino}-${st.mtimeMs}-${entry.offset}"`, contentType: artifact.type, filename: String(req.params.file), started });
  }));

  // The discovery Ignition by image token, for PXE (ignition.config.url): one query parameter, safe in a kernel command line.
  router.get('/images/:infraEnvId/discovery.ign', async (req: Request, res: Response) => {
    const infraEnvId = String(req.params.infraEnvId);
    await checkToken(req, infraEnvId);
    res.type('application/vnd.coreos.ignition+json').send(await discoveryIgnitionFor(ctx, IMAGE_SERVICE, infraEnvId));
  });

  router.get('/images/:infraEnvId/:file', asDownload(async (req, res, next, started) => {
    const infraEnvId = String(req.params.infraEnvId);
    const type = FILE.exec(String(req.params.file))?.[1];
    if (!type) return notFoundHandler(req, res, next);
    const token = await checkToken(req, infraEnvId);
    const { fh, st } = await baseImageFile(await baseImageFor(token.ie));
    const layoutKey = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
    const layout = await layoutOf(fh, st).catch((err: unknown) => {
      throw err instanceof EmbedAreaError ? new AppError('dependency_unavailable', `the base image is not a usable CoreOS live ISO: ${err.message}`) : err;
    });
    // An infra-env whose Ignition (or kernel arguments) does not fit the image's areas.
    const patches = await patchesFor(token.ie, type, layoutKey, layout, token).catch((err: unknown) => {
      throw err instanceof EmbedAreaError ? new AppError('unprocessable', err.message) : err;
    });
    await sendPatchedFile(req, res, {
      fh,
      size: st.size,
      patches,
      etag: patchedEtag(st, patches),
      contentType: 'application/octet-stream',
      filename: `discovery-${infraEnvId}-${type}.iso`,
      started,
    });
  }));
  return router;
}

/** A download handler, counted as starting (see downloadStarting) until its first byte leaves or it answers. */
function asDownload(handler: (req: Request, res: Response, next: NextFunction, started: () => void) => Promise<unknown>) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const started = downloadStarting();
    try {
      await handler(req, res, next, started);
    } finally {
      started();
    }
  };
}

/**
 * One open handle per base image, shared by every download: opening and
 * stat-ing per request would go through libuv's thread pool, where parallel
 * downloads' reads already wait, and delay the first byte. statSync on a
 * cached inode is microseconds. When the file is replaced, new downloads get a
 * new handle; the old one stays open for the downloads still reading it (a
 * base image changes rarely; the process's exit closes it).
 */
const handles = new Map<string, { key: string; fh: Promise<FileHandle> }>();

async function baseImageFile(file: string): Promise<{ fh: FileHandle; st: Stats }> {
  let st: Stats;
  try {
    st = statSync(file);
  } catch (err) {
    throw new AppError('dependency_unavailable', `the base image cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const key = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
  let hit = handles.get(file);
  if (hit?.key !== key) {
    hit = { key, fh: open(file, 'r') };
    handles.set(file, hit);
    hit.fh.catch(() => handles.delete(file));
  }
  try {
    return { fh: await hit.fh, st };
  } catch (err) {
    throw new AppError('dependency_unavailable', `the base image cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}
