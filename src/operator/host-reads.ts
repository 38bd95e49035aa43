/**
 * Reads of Landfall hosts for Agent reconciles, at most one in flight per
 * infra-env. Every such read settles the host's cluster first (a person's read,
 * src/services/refresh-queue.ts): it waits out a refresh in flight and runs a
 * pending one inside the request. Eight Agent reconciles of one cluster in a
 * boot storm were eight such reads queued on the cluster's refresh lock, each
 * forcing a refresh of its own, which is what made an Agent's status late.
 *
 * Now the reads of an infra-env that arrive while one is in flight wait for it
 * and are then served together by one read that starts after all of them
 * arrived (so each sees what its wake-up announced): the host itself when it
 * is one, the infra-env's host list when they are several.
 */
import { LandfallError, type Json } from './landfall-client';

interface Reader {
  getHost(infraEnvId: string, hostId: string): Promise<Json>;
  listHosts(infraEnvId: string): Promise<Json[]>;
}

interface Batch {
  ids: Set<string>;
  result: Promise<Map<string, Json>>;
}

const notFound = (infraEnvId: string, hostId: string) => new LandfallError(404, `GET /infra-envs/${infraEnvId}/hosts/${hostId}: HTTP 404: host ${hostId} not found`);

export class HostReads {
  /** Per infra-env: the read in flight, and the one that will start when it is done. */
  private readonly lanes = new Map<string, { inFlight?: Promise<unknown>; next?: Batch }>();

  constructor(private readonly landfall: Reader) {}

  /** The host as Landfall has it now; a LandfallError 404 when it is gone. */
  async get(infraEnvId: string, hostId: string): Promise<Json> {
    let lane = this.lanes.get(infraEnvId);
    if (!lane) this.lanes.set(infraEnvId, (lane = {}));
    let batch = lane.next;
    if (!batch) {
      const ids = new Set<string>();
      const l = lane;
      // Starts once the read in flight (if any) is done: every id added until then shares it.
      const result = Promise.resolve(l.inFlight)
        .catch(() => undefined)
        .then(async () => {
          if (l.next === batch) l.next = undefined;
          if (ids.size === 1) {
            const [only] = ids;
            try {
              return new Map([[only!, await this.landfall.getHost(infraEnvId, only!)]]);
            } catch (err) {
              if (err instanceof LandfallError && err.status === 404) return new Map<string, Json>();
              throw err;
            }
          }
          return new Map((await this.landfall.listHosts(infraEnvId)).map((h: Json) => [h.id as string, h]));
        });
      batch = { ids, result };
      lane.next = batch;
      lane.inFlight = result;
      void result
        .catch(() => undefined)
        .then(() => {
          if (l.inFlight === result && !l.next) this.lanes.delete(infraEnvId);
        });
    }
    batch.ids.add(hostId);
    const host = (await batch.result).get(hostId);
    if (!host) throw notFound(infraEnvId, hostId);
    return host;
  }
}
