import { HostReads } from '../../src/operator/host-reads';
import { LandfallError } from '../../src/operator/landfall-client';

/** A Landfall whose reads answer when the test says so, recording when each started. */
function fakeLandfall() {
  const calls: Array<{ kind: 'get' | 'list'; infraEnvId: string; hostId?: string; release: () => void }> = [];
  const hosts: Record<string, Array<{ id: string; status: string }>> = { ie1: [{ id: 'a', status: 'known' }, { id: 'b', status: 'known' }, { id: 'c', status: 'insufficient' }], ie2: [{ id: 'x', status: 'known' }] };
  const gate = () => {
    let release!: () => void;
    return { wait: new Promise<void>((r) => (release = r)), release: () => release() };
  };
  return {
    calls,
    hosts,
    async getHost(infraEnvId: string, hostId: string) {
      const g = gate();
      calls.push({ kind: 'get', infraEnvId, hostId, release: g.release });
      await g.wait;
      const h = hosts[infraEnvId]!.find((x) => x.id === hostId);
      if (!h) throw new LandfallError(404, 'not found');
      return { ...h };
    },
    async listHosts(infraEnvId: string) {
      const g = gate();
      calls.push({ kind: 'list', infraEnvId, release: g.release });
      await g.wait;
      return hosts[infraEnvId]!.map((h) => ({ ...h }));
    },
  };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('HostReads: one read of Landfall in flight per infra-env', () => {
  it('a lone read is the host itself; reads arriving meanwhile share one list that starts after them', async () => {
    const lf = fakeLandfall();
    const reads = new HostReads(lf);
    const first = reads.get('ie1', 'a');
    await tick();
    expect(lf.calls.map((c) => c.kind)).toEqual(['get']);
    // Three Agents woken while the first read is in flight: nothing new goes to Landfall yet.
    lf.hosts.ie1![2]!.status = 'known'; // what their wake-up announced, committed before they asked
    const more = [reads.get('ie1', 'b'), reads.get('ie1', 'c'), reads.get('ie1', 'a')];
    await tick();
    expect(lf.calls).toHaveLength(1);
    lf.calls[0]!.release();
    expect((await first).id).toBe('a');
    await tick();
    // Then one list serves all three, and it started after they arrived (it sees c as known).
    expect(lf.calls.map((c) => c.kind)).toEqual(['get', 'list']);
    lf.calls[1]!.release();
    const [b, c, a] = await Promise.all(more);
    expect([b.id, c.id, a.id]).toEqual(['b', 'c', 'a']);
    expect(c.status).toBe('known');
  });

  it('a host missing from the list is a 404, as from GET host; another infra-env does not wait', async () => {
    const lf = fakeLandfall();
    const reads = new HostReads(lf);
    const first = reads.get('ie1', 'a');
    await tick();
    const gone = reads.get('ie1', 'zz');
    const other = reads.get('ie1', 'b');
    const elsewhere = reads.get('ie2', 'x');
    await tick();
    expect(lf.calls.map((c) => `${c.kind}:${c.infraEnvId}`)).toEqual(['get:ie1', 'get:ie2']);
    lf.calls[1]!.release();
    expect((await elsewhere).id).toBe('x');
    lf.calls[0]!.release();
    await first;
    await tick();
    lf.calls[2]!.release();
    expect((await other).id).toBe('b');
    await expect(gone).rejects.toMatchObject({ status: 404 });
    // A later lone read is again the host itself.
    const later = reads.get('ie1', 'c');
    await tick();
    expect(lf.calls.at(-1)).toMatchObject({ kind: 'get', hostId: 'c' });
    lf.calls.at(-1)!.release();
    expect((await later).id).toBe('c');
  });
});
