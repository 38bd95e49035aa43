/**
 * When is a cluster installed (reference §4, HasEnoughMastersAndWorkers)?
 * Single node: its one host installed. Otherwise every control-plane host
 * installed, and, when the cluster has two or more workers, at least two of
 * them. `impossible` means the hosts still able to finish cannot meet it.
 */
export type SuccessVerdict = 'met' | 'pending' | 'impossible';

const ALIVE = ['installing', 'installing-in-progress', 'installing-pending-user-action', 'installed', 'preparing-successful'];

export function successRule(controlPlaneCount: number, hosts: Array<{ role: string; status: string }>): SuccessVerdict {
  const masters = hosts.filter((h) => h.role !== 'worker');
  const workers = hosts.filter((h) => h.role === 'worker');
  const installed = (hs: typeof hosts) => hs.filter((h) => h.status === 'installed').length;
  const alive = (hs: typeof hosts) => hs.filter((h) => ALIVE.includes(h.status)).length;
  const needWorkers = workers.length >= 2 ? 2 : 0;
  if (alive(masters) < controlPlaneCount || alive(workers) < needWorkers) return 'impossible';
  const finished = hosts.every((h) => h.status === 'installed' || h.status === 'error');
  return installed(masters) >= controlPlaneCount && installed(workers) >= needWorkers && finished ? 'met' : 'pending';
}
