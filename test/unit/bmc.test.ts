/**
 * BMC rules that need no BMC: address parsing, sealed credentials, the
 * enrolment state table, and when the install drives a host's BMC.
 */
import { randomBytes } from 'node:crypto';
import { parseBmcAddress, normaliseMac } from '../../src/bmc/address';
import { CredentialsBox, parseCredentialsKey } from '../../src/bmc/credentials';
import { BMC_STATES, BMC_TRANSITIONS, nextBmcStatus, type BmcEvent } from '../../src/domain/lifecycle/bmc-state-machine';
import { diskBootDue, type DiskBootHost } from '../../src/domain/bmc-disk-boot';

describe('BMC addresses', () => {
  it.each([
    ['redfish+http://127.0.0.1:8000/redfish/v1/Systems/abc', { kind: 'redfish', endpoint: 'http://127.0.0.1:8000', systemPath: '/redfish/v1/Systems/abc', virtualMedia: false }],
    ['redfish://10.0.0.1/redfish/v1/Systems/1/', { kind: 'redfish', endpoint: 'https://10.0.0.1', systemPath: '/redfish/v1/Systems/1' }],
    ['Redfish-VirtualMedia+https://bmc.example:8443', { kind: 'redfish', endpoint: 'https://bmc.example:8443', systemPath: undefined, virtualMedia: true }],
    ['simulated://rack1-u07', { kind: 'simulated', endpoint: 'rack1-u07' }],
  ])('%s', (raw, want) => {
    expect(parseBmcAddress(raw)).toMatchObject(want);
  });
  it.each([
    ['ipmi://10.0.0.1', /scheme ipmi/],
    ['redfish://u:p@10.0.0.1', /must not carry a user or password/],
    ['redfish://10.0.0.1/redfish/v1/Managers/1', /not a Redfish system/],
    ['redfish://10.0.0.1/redfish/v1/Systems/1?x=1', /query/],
    ['10.0.0.1', /not a URL/],
  ])('refuses %s', (raw, re) => {
    expect(() => parseBmcAddress(raw)).toThrow(re);
  });
  it('normalises MAC addresses', () => {
    expect(normaliseMac('52-54-00-AA-bb-01')).toBe('52:54:00:aa:bb:01');
    expect(() => normaliseMac('52:54:00')).toThrow(/not a MAC/);
  });
});

describe('sealed BMC credentials (AES-256-GCM)', () => {
  const box = new CredentialsBox(randomBytes(32));
  it('opens what it sealed, for the same record only, and never shows the password', () => {
    const sealed = box.seal({ username: 'root', password: 'calvin-Pa55' }, 'rec-1');
    expect(sealed).not.toContain('calvin');
    expect(box.seal({ username: 'root', password: 'calvin-Pa55' }, 'rec-1')).not.toBe(sealed);
    expect(box.open(sealed, 'rec-1')).toEqual({ username: 'root', password: 'calvin-Pa55' });
    expect(() => box.open(sealed, 'rec-2')).toThrow(/do not open/);
    expect(() => new CredentialsBox(randomBytes(32)).open(sealed, 'rec-1')).toThrow(/do not open with this key/);
  });
  it('takes the key as 64 hex digits or base64 of 32 bytes', () => {
    const k = randomBytes(32);
    expect(parseCredentialsKey(k.toString('hex'))).toEqual(k);
    expect(parseCredentialsKey(k.toString('base64'))).toEqual(k);
    expect(() => parseCredentialsKey('c2hvcnQ=')).toThrow(/32 bytes/);
  });
});

describe('BMC enrolment state table', () => {
  const events: BmcEvent[] = [{ type: 'PowerOnSucceeded', reset: 'On' }, { type: 'PowerOnFailed', reason: 'x' }, { type: 'HostMatched', hostId: 'h', by: 'boot-mac' }];
  it('has at most one rule for every event in every state, and only known states', () => {
    for (const from of Object.keys(BMC_STATES)) for (const e of events) expect(() => nextBmcStatus(from, e)).not.toThrow();
    for (const r of BMC_TRANSITIONS) for (const s of [...r.from, r.to]) expect(Object.keys(BMC_STATES)).toContain(s);
  });
  it.each([
    ['enrolling', events[0]!, 'booting'],
    ['enrolling', events[1]!, 'failed'],
    ['booting', events[2]!, 'attached'],
    ['failed', events[2]!, 'attached'],
    ['attached', events[2]!, undefined],
    ['booting', events[1]!, undefined],
  ] as const)('%s on %s → %s', (from, e, to) => {
    expect(nextBmcStatus(from, e)?.to).toBe(to);
  });
});

describe('when the install drives a host\'s BMC', () => {
  const install = { bootstrapHostId: 'b', controlPlaneCount: 3 };
  const host = (o: Partial<DiskBootHost>): DiskBootHost => ({ hostId: 'm', role: 'master', status: 'installing-in-progress', bmc: true, ...o });
  it.each([
    ['no BMC', host({ bmc: undefined, stage: 'Rebooting' }), install, undefined],
    ['still writing', host({ stage: 'Writing image to disk' }), install, undefined],
    ['master at Rebooting, nothing done', host({ stage: 'Rebooting' }), install, 'switch'],
    ['master at Rebooting, switched', host({ stage: 'Rebooting', diskBoot: 'switched' }), install, 'restart'],
    ['master past Rebooting, switched', host({ stage: 'Configuring', diskBoot: 'switched' }), install, undefined],
    ['restarted', host({ stage: 'Rebooting', diskBoot: 'restarted' }), install, undefined],
    ['BMC failed', host({ stage: 'Rebooting', diskBoot: 'failed' }), install, undefined],
    ['bootstrap waiting for the control plane: switch, no restart yet', host({ hostId: 'b', stage: 'Waiting for control plane' }), install, 'switch'],
    ['bootstrap switched, still waiting', host({ hostId: 'b', stage: 'Waiting for bootkube', diskBoot: 'switched' }), install, undefined],
    ['single node before writing (Waiting for bootkube)', host({ hostId: 'b', stage: 'Waiting for bootkube' }), { bootstrapHostId: 'b', controlPlaneCount: 1 }, undefined],
    ['host in error', host({ stage: 'Rebooting', status: 'error' }), install, undefined],
  ] as const)('%s', (_n, h, i, want) => {
    expect(diskBootDue(h, i)).toBe(want);
  });
});
