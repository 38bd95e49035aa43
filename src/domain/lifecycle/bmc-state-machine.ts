/**
 * The enrolment of a machine by its BMC, as a table: Landfall powers it on
 * from the infra-env's discovery ISO, then waits for its agent to register.
 * A BMC given for a host that has already registered starts `attached`.
 * No two rules can fire for one event in one state (test/unit/bmc.test.ts).
 */
export const BMC_STATES = {
  enrolling: 'Landfall is inserting the discovery ISO as virtual media and powering the machine on.',
  booting: 'The machine was powered on from the discovery ISO; waiting for its agent to register.',
  attached: 'A registered host carries this BMC: the install uses it to boot the host from disk.',
  failed: 'The BMC refused a call or could not be reached; status_info names the BMC, the call and its answer.',
} as const;

export type BmcStatus = keyof typeof BMC_STATES;

export type BmcEvent =
  | { type: 'PowerOnSucceeded'; reset: string }
  | { type: 'PowerOnFailed'; reason: string }
  | { type: 'HostMatched'; hostId: string; by: 'system-uuid' | 'boot-mac' };

export interface BmcRule<E extends BmcEvent['type'] = BmcEvent['type']> {
  event: E;
  from: readonly BmcStatus[];
  to: BmcStatus;
  info: (e: Extract<BmcEvent, { type: E }>) => string;
  description: string;
}

const rule = <E extends BmcEvent['type']>(r: BmcRule<E>): BmcRule => r as unknown as BmcRule;

export const BMC_TRANSITIONS: readonly BmcRule[] = [
  rule({ event: 'PowerOnSucceeded', from: ['enrolling'], to: 'booting', info: (e) => `Powered on from the discovery ISO (virtual media, boot override Cd once, reset ${e.reset}); waiting for the agent to register`, description: 'The BMC took the ISO, the boot override and the power-on.' }),
  rule({ event: 'PowerOnFailed', from: ['enrolling'], to: 'failed', info: (e) => e.reason, description: 'The BMC refused a call, or stayed unreachable through every retry.' }),
  rule({ event: 'HostMatched', from: ['enrolling', 'booting', 'failed'], to: 'attached', info: (e) => `Host ${e.hostId} registered (matched by ${e.by === 'system-uuid' ? 'the BMC\'s system UUID' : 'boot MAC address'})`, description: 'An agent registered whose host id is the system UUID the BMC reported, or whose inventory has the boot MAC address.' }),
];

export interface BmcTransition {
  to: BmcStatus;
  info: string;
}

export function nextBmcStatus(from: string, event: BmcEvent): BmcTransition | undefined {
  const matches = BMC_TRANSITIONS.filter((r) => r.event === event.type && r.from.includes(from as BmcStatus));
  if (matches.length > 1) throw new Error(`ambiguous BMC transitions from ${from} on ${event.type}`);
  const r = matches[0];
  return r ? { to: r.to, info: (r.info as (e: BmcEvent) => string)(event) } : undefined;
}
