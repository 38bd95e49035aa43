/**
 * The cluster's step view stored with its stamp
 * (migrations/20261130130000_cluster_step_views.ts): the refresh that moves
 * the stamp writes the peers the poll's arguments are built from, the same
 * peers a poll builds from the hosts' inventories, and an API process that
 * does not hold the view reads that row instead of the inventories. Without a
 * row under the poll's stamp, it builds the view from the inventories.
 */
import { randomUUID } from 'node:crypto';
import { stepViewPeers } from '../../src/services/step-args';
import { call, PULL_SECRET, startApiHarness, type ApiHarness } from '../support/api-harness';
import { smallInventory } from '../support/small-inventory';

let a: ApiHarness;
beforeAll(async () => {
  a = await startApiHarness();
});
afterAll(async () => {
  await a?.stop();
});

it('is written by the refresh with its stamp, equal to the view from the inventories, and read by a process that lacks it', async () => {
  const c = (await call('POST', `${a.base}/clusters`, { body: { name: 'stored-view', openshift_version: '1.31', pull_secret: PULL_SECRET, base_dns_domain: 'example.com' } })).body;
  const ie = (await call('POST', `${a.base}/infra-envs`, { body: { name: 'stored-view-ie', pull_secret: PULL_SECRET, cluster_id: c.id } })).body;
  const ids = [randomUUID(), randomUUID(), randomUUID()];
  for (const [n, id] of ids.entries()) {
    expect((await call('POST', `${a.base}/infra-envs/${ie.id}/hosts`, { body: { host_id: id } })).status).toBe(201);
    expect((await call('POST', `${a.base}/infra-envs/${ie.id}/hosts/${id}/instructions`, { body: { step_type: 'inventory', step_id: `inventory-${n}`, output: smallInventory(`h${n}`, `10.9.1.${n + 20}`) } })).status).toBe(204);
  }
  // A person's read settles the cluster's refresh.
  expect((await call('GET', `${a.base}/clusters/${c.id}`)).status).toBe(200);

  const db = a.db;
  const [stored] = (await db.raw('select v.stamp, v.peers, c.step_view_stamp from cluster_step_views v join clusters c on c.id = v.cluster_id where c.id = ?', [c.id])).rows as Array<{ stamp: string; peers: string; step_view_stamp: string }>;
  expect(stored).toBeDefined();
  expect(stored!.stamp).toBe(stored!.step_view_stamp);
  const rows = (await db.raw('select id, inventory from hosts where cluster_id = ?', [c.id])).rows as Array<{ id: string; inventory: string }>;
  const fromInventories = stepViewPeers(rows.map((r) => ({ id: r.id, interfaces: (JSON.parse(r.inventory) as { interfaces: [] }).interfaces })));
  expect(JSON.parse(stored!.peers)).toEqual(fromInventories);
  expect(fromInventories.map((p) => p.nics[0]!.ip_addresses)).toEqual([...ids].sort().map((id) => [`10.9.1.${ids.indexOf(id) + 20}/24`]));

  const peersHandedOut = async (hostId: string) => {
    const r = await call('GET', `${a.base}/infra-envs/${ie.id}/hosts/${hostId}/instructions`);
    expect(r.status).toBe(200);
    const step = (r.body.instructions as Array<{ step_type: string; args: string[] }>).find((s) => s.step_type === 'connectivity-check');
    expect(step).toBeDefined();
    return step!.args.join(' ');
  };
  // Marked, so an answer built from the stored row says so: no poll has built this cluster's view in this process.
  await db.raw(`update cluster_step_views set peers = replace(peers, '"eth0"', '"stored-eth0"') where cluster_id = ?`, [c.id]);
  expect(await peersHandedOut(ids[0]!)).toContain('stored-eth0');
  // No row under the poll's stamp (a stamp no refresh stored a view with, as a cluster's before this table had):
  // the view the process holds is not that stamp's, and the one built for it comes from the inventories.
  await db.raw("update clusters set step_view_stamp = 'no-view-stored' where id = ?", [c.id]);
  const fallback = await peersHandedOut(ids[1]!);
  expect(fallback).not.toContain('stored-eth0');
  expect(fallback).toContain('eth0');
});
