/** Builds the ServiceContext from configuration, once per process (api and worker alike). */
import { readFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Db } from '../db/database';
import type { ObjectStore } from '../storage';
import { TokenSigner } from '../auth/jwt';
import { ImageUrlSigner, loadImageUrlKey } from '../auth/image-url-signer';
import { BaseImages } from '../images/base-images';
import { DEFAULT_RELEASES, parseReleaseCatalogue, type ReleaseCatalogue } from '../domain/releases';
import { DEFAULT_LIFECYCLE_SETTINGS, parseRequirementsOverride, type LifecycleSettings } from '../domain/lifecycle/requirements';
import type { Repos, ServiceContext } from './context';
import { createBmcPorts } from '../bmc/ports';
import { parseCredentialsKey } from '../bmc/credentials';

export function buildServiceContext(cfg: Config, ports: { db: Db; repos: Repos; store: ObjectStore; temporal: Client }): ServiceContext {
  const releases = loadReleases(cfg.releasesFile);
  let imageUrlSigner: Promise<ImageUrlSigner> | undefined;
  return {
    ...ports,
    signer: createSigner(cfg),
    releases,
    baseUrl: cfg.api.baseUrl,
    imageUrlTtlSeconds: cfg.auth.imageUrlTtlSeconds,
    agentTokenTtlSeconds: cfg.auth.agentTokenTtlSeconds,
    imageUrlSigner: () =>
      (imageUrlSigner ??= loadImageUrlKey(ports.db, cfg.auth.imageUrlSecret).then(
        (key) => new ImageUrlSigner(key),
        (err: unknown) => {
          // Not kept: the next request tries the database again.
          imageUrlSigner = undefined;
          throw err;
        },
      )),
    baseImages: new BaseImages({ releases, store: ports.store, cacheDir: cfg.images.cacheDir, fallbackPath: cfg.images.baseIsoPath, defaults: cfg.images.discoveryOsIso ? { x86_64: cfg.images.discoveryOsIso } : undefined }),
    lifecycle: loadLifecycleSettings(cfg),
    stepRepeatMs: Object.fromEntries(Object.entries(cfg.stepRepeatSeconds).map(([type, s]) => [type, (s as number) * 1000])),
    installTimeouts: cfg.install,
    installImages: cfg.installImages,
    logs: cfg.logs,
    bmc: createBmcPorts(ports.db, { key: cfg.bmc.credentialsKey ? parseCredentialsKey(cfg.bmc.credentialsKey) : undefined, imageBaseUrl: cfg.bmc.imageBaseUrl ?? cfg.api.baseUrl }),
    now: () => new Date(),
  };
}

export function createSigner(cfg: Config): TokenSigner | undefined {
  if (!cfg.auth.privateKeyPem && !cfg.auth.publicKeyPem) return undefined;
  return new TokenSigner({ privateKeyPem: cfg.auth.privateKeyPem, publicKeyPem: cfg.auth.publicKeyPem });
}

export function loadReleases(file: string | undefined): ReleaseCatalogue {
  if (!file) return DEFAULT_RELEASES;
  try {
    return parseReleaseCatalogue(JSON.parse(readFileSync(file, 'utf8')));
  } catch (err) {
    throw new Error(`RELEASES_FILE ${file}: ${(err as Error).message}`);
  }
}

export function loadLifecycleSettings(cfg: Config): LifecycleSettings {
  let requirements = DEFAULT_LIFECYCLE_SETTINGS.requirements;
  if (cfg.lifecycle.requirementsFile) {
    try {
      requirements = parseRequirementsOverride(JSON.parse(readFileSync(cfg.lifecycle.requirementsFile, 'utf8')));
    } catch (err) {
      throw new Error(`HOST_REQUIREMENTS_FILE ${cfg.lifecycle.requirementsFile}: ${(err as Error).message}`);
    }
  }
  return { ...DEFAULT_LIFECYCLE_SETTINGS, requirements, disconnectTimeoutMs: cfg.lifecycle.disconnectTimeoutMs };
}
