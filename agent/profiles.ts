import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parseProfile, type HostProfile } from './executors/simulated';

/** Profiles shipped in agent/profiles/, found from this file's place in the checkout (src or dist). */
function profilesDir(): string {
  let dir = __dirname;
  for (let i = 0; i < 5; i++) {
    const candidate = path.join(dir, 'agent', 'profiles');
    if (existsSync(candidate)) return candidate;
    if (path.basename(dir) === 'agent' && existsSync(path.join(dir, 'profiles'))) return path.join(dir, 'profiles');
    dir = path.dirname(dir);
  }
  throw new Error('agent/profiles not found');
}

export function listProfiles(): string[] {
  return readdirSync(profilesDir()).filter((f) => f.endsWith('.yaml')).map((f) => f.replace(/\.yaml$/, '')).sort();
}

/** A shipped profile by name, or a YAML file by path. */
export function loadProfile(nameOrPath: string): HostProfile {
  const file = nameOrPath.endsWith('.yaml') || nameOrPath.includes('/') ? nameOrPath : path.join(profilesDir(), `${nameOrPath}.yaml`);
  if (!existsSync(file)) throw new Error(`no host profile "${nameOrPath}" (shipped: ${listProfiles().join(', ')})`);
  return parseProfile(readFileSync(file, 'utf8'));
}

/** "control-plane:3,worker:2" → the profile of each of `count` hosts, cycling through the mix in proportion. */
export function expandMix(mix: string, count: number): string[] {
  const parts = mix.split(',').map((p) => p.trim()).filter(Boolean).map((p) => {
    // A weight follows the last ':'; a path to a profile file may not contain one.
    const at = p.lastIndexOf(':');
    const [name, weight] = at > 0 && /^\d+(\.\d+)?$/.test(p.slice(at + 1)) ? [p.slice(0, at), p.slice(at + 1)] : [p, undefined];
    const w = weight === undefined ? 1 : Number(weight);
    if (!name || !(w > 0)) throw new Error(`bad profile mix entry "${p}" (expected name or name:weight)`);
    return { name, weight: w };
  });
  if (!parts.length) throw new Error('the profile mix is empty');
  const total = parts.reduce((a, p) => a + p.weight, 0);
  const out: string[] = [];
  // Largest-remainder apportionment, then interleave so small fleets still get every profile early.
  const counts = parts.map((p) => Math.floor((p.weight / total) * count));
  let left = count - counts.reduce((a, b) => a + b, 0);
  for (let i = 0; left > 0; i = (i + 1) % parts.length, left--) counts[i]!++;
  const remaining = [...counts];
  while (out.length < count) {
    for (let i = 0; i < parts.length && out.length < count; i++) {
      if (remaining[i]! > 0) {
        out.push(parts[i]!.name);
        remaining[i]!--;
      }
    }
  }
  return out;
}
