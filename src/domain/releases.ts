/**
 * The releases Landfall can install. `openshift_version` on the wire carries a
 * Kubernetes minor release ("1.31"); the catalogue comes from config
 * (RELEASES_FILE) and falls back to this default.
 */
export interface Release {
  display_name: string;
  support_level: 'beta' | 'production' | 'maintenance' | 'end-of-life';
  default?: boolean;
  cpu_architectures: string[];
  /** The exact Kubernetes version kubeadm installs. */
  kubernetes_version: string;
  /**
   * The live ISO the discovery image of this release is made from, per CPU
   * architecture: fetched once from `url` (https, http or file), checked
   * against `sha256` when given, then kept in object storage and on disk.
   * Without an entry, BASE_ISO_PATH serves every release and architecture.
   */
  base_images?: Record<string, BaseImageSource>;
}

export interface BaseImageSource {
  url: string;
  sha256?: string;
}

export type ReleaseCatalogue = Record<string, Release>;

export const DEFAULT_RELEASES: ReleaseCatalogue = {
  '1.30': { display_name: 'Kubernetes 1.30.8', support_level: 'maintenance', cpu_architectures: ['x86_64', 'arm64'], kubernetes_version: '1.30.8' },
  '1.31': { display_name: 'Kubernetes 1.31.4', support_level: 'production', cpu_architectures: ['x86_64', 'arm64'], kubernetes_version: '1.31.4' },
  '1.32': { display_name: 'Kubernetes 1.32.0', support_level: 'production', default: true, cpu_architectures: ['x86_64', 'arm64'], kubernetes_version: '1.32.0' },
};

export function parseReleaseCatalogue(json: unknown): ReleaseCatalogue {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new Error('the release catalogue must be an object of version → release');
  const out: ReleaseCatalogue = {};
  for (const [version, r] of Object.entries(json as Record<string, Partial<Release>>)) {
    if (!/^\d+\.\d+$/.test(version)) throw new Error(`release key "${version}" must look like 1.31`);
    if (!r || typeof r.display_name !== 'string' || typeof r.kubernetes_version !== 'string' || !Array.isArray(r.cpu_architectures)) {
      throw new Error(`release ${version} needs display_name, kubernetes_version and cpu_architectures`);
    }
    for (const [arch, img] of Object.entries(r.base_images ?? {})) {
      if (!r.cpu_architectures.includes(arch)) throw new Error(`release ${version}: base_images.${arch} is not one of its cpu_architectures`);
      if (!img || typeof img.url !== 'string' || !/^(https?|file):\/\/\S+$/.test(img.url)) throw new Error(`release ${version}: base_images.${arch}.url must be an http(s) or file URL`);
      if (img.sha256 !== undefined && !/^[0-9a-f]{64}$/.test(img.sha256)) throw new Error(`release ${version}: base_images.${arch}.sha256 must be 64 lower-case hex digits`);
    }
    out[version] = { support_level: 'production', ...r } as Release;
  }
  if (!Object.keys(out).length) throw new Error('the release catalogue is empty');
  return out;
}

/** Accepts "1.31" or a patch version "1.31.4" of a catalogued minor. */
export function resolveRelease(catalogue: ReleaseCatalogue, requested: string): string | undefined {
  const minor = /^(\d+\.\d+)(\.\d+)?$/.exec(requested.trim())?.[1];
  return minor && catalogue[minor] ? minor : undefined;
}

/**
 * The catalogue entries a `v2ListSupportedOpenshiftVersions` call asks for:
 * `version` keeps those whose display name contains it. `only_latest` needs no
 * filter: each entry already is the one (latest) release of its minor.
 */
export function releasesMatching(catalogue: ReleaseCatalogue, version?: string): Array<[string, Release]> {
  const entries = Object.entries(catalogue);
  return version ? entries.filter(([, r]) => r.display_name.includes(version)) : entries;
}
