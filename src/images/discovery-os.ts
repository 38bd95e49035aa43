/**
 * Where `landfall dev` finds Landfall's own discovery OS: scripts/setup.sh
 * runs scripts/build-discovery-os.sh (output cached outside the checkout) and
 * links the result as dist/discovery-os-image in the checkout. The live ISO there
 * becomes DISCOVERY_OS_ISO, the x86_64 base image of every release the
 * catalogue names no image for.
 */
import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';

/** The checkout holding this file: the nearest directory upwards with a package.json (works from src/ and from dist/src/). */
export function checkoutRoot(from: string = __dirname): string | undefined {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) return undefined;
  }
}

/** The built live ISO (its real path, so a rebuild never changes the file under a running API), or undefined when set-up has not built one. */
export function builtDiscoveryOsIso(root: string | undefined = checkoutRoot()): string | undefined {
  if (!root) return undefined;
  const link = path.join(root, 'dist', 'discovery-os-image', 'live.iso');
  try {
    return existsSync(link) ? realpathSync(link) : undefined;
  } catch {
    return undefined;
  }
}
