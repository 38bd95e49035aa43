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
import { Router, type Request, type Response } from 'express';
import { open, type FileHandle } from 'node:fs/promises';
import type { Principal } from '../auth/principal';
import { TokenError } from '../auth/jwt';
import { AppError, notFound } from '../errors';
import type { ServiceContext } from '../services/context';
import { discoveryIgnitionFor } from '../services/infra-envs-service';
import { EmbedAreaError, ignitionAreaBytes, kargsPatches, minimalIsoKargs, readIsoLayout, type IsoLayout, type Patch } from '../iso/embed-area';
import { patchedEtag, sendExtent, sendPatchedFile } from '../iso/stream';
import { IsoImage } from '../iso/iso9660';
import { errorBody, notFoundHandler } from './errors';

const IMAGE_SERVICE: Principal = { kind: 'admin', user: 'landfall-image-service' };
const FILE = /^(full|minimal)\.iso$/;
/** Patched areas kept for range consistency; one is the size of the embed area (256 KiB on CoreOS). */
const MAX_CACHED = 64;

export interface ImageRoutesDeps {
  services: ServiceContext;
  baseIsoPath: string | undefined;
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

  /** The image token's claims when it is good for this infra-env; otherwise the unknown-infra-env answer. */
  const checkToken = async (req: Request, infraEnvId: string): Promise<{ token: string; exp: number } | undefined> => {
    if (!ctx.signer) return undefined;
    const token = typeof req.query.image_token === 'string' ? req.query.image_token : '';
    try {
      const claims = ctx.signer.verify(token, ctx.now().getTime());
      if (claims.use === 'image' && claims.infra_env_id === infraEnvId && typeof claims.exp === 'number') {
        // A URL made before the infra-env last changed is retired: it would no longer carry what the user configured.
        const ie = await ctx.repos.infraEnvs.get(infraEnvId);
        if (ie && (claims.image_version ?? 0) === Number((ie.doc as Record<string, unknown>).image_version ?? 0)) return { token, exp: claims.exp * 1000 };
      }
    } catch (err) {
      if (!(err instanceof TokenError)) throw err;
    }
    throw notFound(`infra-env ${infraEnvId}`);
  };

  const buildPatches = async (infraEnvId: string, type: string, layout: IsoLayout): Promise<Patch[]> => {
    const ignition = await discoveryIgnitionFor(ctx, IMAGE_SERVICE, infraEnvId);
    const patches: Patch[] = [{ offset: layout.ignition.offset, data: ignitionAreaBytes(ignition, layout.ignition.length) }];
    if (type === 'minimal' && layout.kargs) {
      patches.push(...kargsPatches(layout, minimalIsoKargs(layout.kargs.default, `${ctx.baseUrl}/images/${infraEnvId}/rootfs.img`)));
    }
    return patches;
  };

  const patchesFor = (infraEnvId: string, type: string, layoutKey: string, layout: IsoLayout, token: { token: string; exp: number } | undefined): Promise<Patch[]> => {
    // Without a signer the Ignition carries no token and is the same on every call: nothing to keep.
    if (!token) return buildPatches(infraEnvId, type, layout);
    const now = ctx.now().getTime();
    for (const [k, v] of patchCache) if (v.expiresAt <= now) patchCache.delete(k);
    const key = `${layoutKey}|${type}|${token.token}`;
    const hit = patchCache.get(key);
    if (hit) return hit.patches;
    const patches = buildPatches(infraEnvId, type, layout);
    patchCache.set(key, { expiresAt: token.exp, patches });
    // A failure (unknown infra-env, config too large) is not kept.
    patches.catch(() => patchCache.delete(key));
    while (patchCache.size > MAX_CACHED) patchCache.delete(patchCache.keys().next().value!);
    return patches;
  };

  /**
   * The live system's parts inside the base ISO, for the minimal ISO (rootfs)
   * and PXE (kernel, initrd, rootfs): the same token rules as the ISO itself.
   * Paths are the ISO 9660 (8.3, upper-case) names, as coreos-installer looks them up.
   */
  const ARTIFACTS: Record<string, { path: string; type: string }> = {
    'rootfs.img': { path: 'IMAGES/PXEBOOT/ROOTFS.IMG', type: 'application/octet-stream' },
    'vmlinuz': { path: 'IMAGES/PXEBOOT/VMLINUZ', type: 'application/octet-stream' },
    'initrd.img': { path: 'IMAGES/PXEBOOT/INITRD.IMG', type: 'application/octet-stream' },
  };
  // The discovery Ignition by image token, for PXE (ignition.config.url): one query parameter, safe in a kernel command line.
  router.get('/images/:infraEnvId/discovery.ign', async (req: Request, res: Response) => {
    const infraEnvId = String(req.params.infraEnvId);
    await checkToken(req, infraEnvId);
    res.type('application/vnd.coreos.ignition+json').send(await discoveryIgnitionFor(ctx, IMAGE_SERVICE, infraEnvId));
  });

  router.get('/images/:infraEnvId/:file', async (req: Request, res: Response, next) => {
    const artifact = ARTIFACTS[String(req.params.file)];
    if (!artifact) return next();
    const infraEnvId = String(req.params.infraEnvId);
    await checkToken(req, infraEnvId);
    // The infra-env must exist (and the answer for a foreign one is the same 404).
    if (!(await ctx.repos.infraEnvs.get(infraEnvId))) throw notFound(`infra-env ${infraEnvId}`);
    if (!deps.baseIsoPath) {
      res.status(404).json(errorBody(404, 'no base image is configured (BASE_ISO_PATH is unset)'));
      return;
    }
    const fh = await open(deps.baseIsoPath, 'r');
    try {
      const st = await fh.stat();
      const entry = await (await IsoImage.open(fh)).find(artifact.path);
      if (!entry || entry.directory) {
        res.status(404).json(errorBody(404, `the base image has no ${artifact.path}`));
        return;
      }
      await sendExtent(req, res, { fh, offset: entry.offset, length: entry.length, etag: `"${st.ino}-${st.mtimeMs}-${entry.offset}"`, contentType: artifact.type, filename: String(req.params.file) });
    } finally {
      await fh.close();
    }
  });

  router.get('/images/:infraEnvId/:file', async (req: Request, res: Response, next) => {
    const infraEnvId = String(req.params.infraEnvId);
    const type = FILE.exec(String(req.params.file))?.[1];
    if (!type) return notFoundHandler(req, res, next);
    const token = await checkToken(req, infraEnvId);
    if (!deps.baseIsoPath) {
      res.status(404).json(errorBody(404, 'no base image is configured (BASE_ISO_PATH is unset), so no discovery ISO can be served'));
      return;
    }
    let fh: FileHandle;
    try {
      fh = await open(deps.baseIsoPath, 'r');
    } catch (err) {
      throw new AppError('dependency_unavailable', `the base image cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    try {
      const st = await fh.stat();
      const layoutKey = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
      const layout = await layoutOf(fh, st).catch((err: unknown) => {
        throw err instanceof EmbedAreaError ? new AppError('dependency_unavailable', `the base image is not a usable CoreOS live ISO: ${err.message}`) : err;
      });
      // An infra-env whose Ignition (or kernel arguments) does not fit the image's areas.
      const patches = await patchesFor(infraEnvId, type, layoutKey, layout, token).catch((err: unknown) => {
        throw err instanceof EmbedAreaError ? new AppError('unprocessable', err.message) : err;
      });
      await sendPatchedFile(req, res, {
        fh,
        size: st.size,
        patches,
        etag: patchedEtag(st, patches),
        contentType: 'application/octet-stream',
        filename: `discovery-${infraEnvId}-${type}.iso`,
      });
    } finally {
      await fh.close();
    }
  });
  return router;
}
