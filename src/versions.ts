/**
 * What this Landfall is made of, for GET /v2/component-versions: AS answers
 * with its own images there (service, agent, installer, controller); Landfall
 * has a service (API and worker, one package) and the agent its discovery
 * images run, which also installs the host.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { AGENT_VERSION } from '../agent/config';

let cached: string | undefined;

/** The version in package.json, found from src/ or dist/src/ alike. */
export function landfallVersion(): string {
  if (cached) return cached;
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) return (cached = (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version);
  }
  return (cached = 'unknown');
}

export function componentVersions(): { versions: Record<string, string>; release_tag: string } {
  const version = landfallVersion();
  return { versions: { 'landfall-service': version, 'discovery-agent': AGENT_VERSION }, release_tag: `v${version}` };
}
