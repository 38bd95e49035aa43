import { canSeeInfraEnv, canSeeInfraEnvById, type Principal } from '../../src/auth/principal';

/** canSeeInfraEnvById must never contradict canSeeInfraEnv, whatever the row it did not read. */
describe('canSeeInfraEnvById', () => {
  const ID = 'ie-1';
  const principals: Principal[] = [
    { kind: 'admin', user: 'root' },
    { kind: 'user', user: 'alice' },
    { kind: 'agent', infraEnvId: ID },
    { kind: 'agent', infraEnvId: 'ie-2' },
    { kind: 'agent', clusterId: 'c-1' },
    { kind: 'agent' },
    { kind: 'image', infraEnvId: ID },
    { kind: 'image', infraEnvId: 'ie-2' },
  ];
  const rows = ['alice', 'bob', ''].flatMap((owner) => [null, 'c-1', 'c-2'].map((cluster_id) => ({ id: ID, owner, cluster_id })));

  it.each(principals.map((p) => [JSON.stringify(p), p] as const))('agrees with canSeeInfraEnv for %s', (_name, p) => {
    const byId = canSeeInfraEnvById(p, ID);
    const answers = new Set(rows.map((row) => canSeeInfraEnv(p, row)));
    if (byId === undefined) expect(answers.size).toBe(2);
    else expect([...answers]).toEqual([byId]);
  });

  it('decides without the row for administrators and tokens scoped to one infra-env', () => {
    expect(canSeeInfraEnvById({ kind: 'admin', user: '' }, ID)).toBe(true);
    expect(canSeeInfraEnvById({ kind: 'agent', infraEnvId: ID }, ID)).toBe(true);
    expect(canSeeInfraEnvById({ kind: 'agent', infraEnvId: 'ie-2' }, ID)).toBe(false);
    expect(canSeeInfraEnvById({ kind: 'user', user: 'alice' }, ID)).toBeUndefined();
  });
});
