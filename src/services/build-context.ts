/** Builds the ServiceContext from configuration, once per process (api and worker alike). */
import { readFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Db } from '../db/database';
import type { ObjectStore } from '../storage';
import { TokenSigner } from '../auth/jwt';
import { DEFAULT_RELEASES, parseReleaseCatalogue, type ReleaseCatalogue } from '../domain/releases';
import { DEFAULT_LIFECYCLE_SETTINGS, parseRequirementsOverride, type LifecycleSettings } from '../domain/lifecycle/requirements';
import type { Repos, ServiceContext } from './context';

export function buildServiceContext(cfg: Config, ports: { db: Db; repos: Repos; store: ObjectStore; temporal: Client }): ServiceContext {
  return {
    ...ports,
    signer: createSigner(cfg),
    releases: loadReleases(cfg.releasesFile),
    baseUrl: cfg.api.baseUrl,
    imageUrlTtlSeconds: cfg.auth.imageUrlTtlSeconds,
    lifecycle: loadLifecycleSettings(cfg),
    installTimeouts: cfg.install,
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
