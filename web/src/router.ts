/**
 * A few lines of routing on the History API: the URL names the cluster and the
 * step, so a reload (or a shared link) lands on the same page, which then
 * reads its state from the API.
 */
import { useEffect, useState } from 'react';

export type Route =
  | { page: 'clusters' }
  | { page: 'new' }
  | { page: 'token' }
  | { page: 'insights' }
  | { page: 'cluster'; clusterId: string; step: Step | undefined }
  | { page: 'not-found' };

export const STEPS = ['image', 'hosts', 'networking', 'review', 'progress', 'done'] as const;
export type Step = (typeof STEPS)[number];

export function parseRoute(pathname: string): Route {
  const parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0 || (parts.length === 1 && parts[0] === 'clusters')) return { page: 'clusters' };
  if (parts[0] === 'token' && parts.length === 1) return { page: 'token' };
  if (parts[0] === 'insights' && parts.length === 1) return { page: 'insights' };
  if (parts[0] === 'clusters' && parts[1] === 'new' && parts.length === 2) return { page: 'new' };
  if (parts[0] === 'clusters' && parts[1] && parts.length <= 3) {
    const step = parts[2] as Step | undefined;
    if (step !== undefined && !STEPS.includes(step)) return { page: 'not-found' };
    return { page: 'cluster', clusterId: parts[1], step };
  }
  return { page: 'not-found' };
}

export const clusterPath = (clusterId: string, step?: Step) => `/clusters/${encodeURIComponent(clusterId)}${step ? `/${step}` : ''}`;

const listeners = new Set<() => void>();

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  if (to === location.pathname + location.search) return;
  if (opts.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  listeners.forEach((fn) => fn());
  window.scrollTo(0, 0);
}

export function useLocation(): string {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const update = () => setPath(location.pathname);
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return path;
}
