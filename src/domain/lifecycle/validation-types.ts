/** One validation's outcome, with the remediation the API adds on top of assisted-service's shape. */
export type ValidationStatus = 'success' | 'failure' | 'pending' | 'error' | 'disabled';

export interface Peer {
  host_id: string;
  hostname?: string;
  nic?: string;
  address?: string;
}

export interface ValidationResult {
  id: string;
  status: ValidationStatus;
  message: string;
  /** Machine-readable cause of a failure, stable across releases (e.g. "disk-sync-too-slow"). */
  cause?: string;
  /** Who is involved: which host/NIC cannot reach which address. */
  peers?: Peer[];
  /** What to do about it, in one sentence a person can act on. */
  hint?: string;
  /** Whether this outcome blocks install; a soft-threshold failure warns but allows it. */
  blocking: boolean;
}

export interface ValidationSpec<F, C> {
  id: string;
  category: string;
  description: string;
  /** The check: facts in, outcome out. Never I/O. */
  check(facts: F, ctx: C): Omit<ValidationResult, 'id'>;
}

export const ok = (message: string): Omit<ValidationResult, 'id'> => ({ status: 'success', message, blocking: false });
export const pending = (message: string): Omit<ValidationResult, 'id'> => ({ status: 'pending', message, blocking: true });
export const fail = (message: string, r: { cause: string; hint: string; peers?: Peer[]; blocking?: boolean }): Omit<ValidationResult, 'id'> => ({
  status: 'failure',
  message,
  cause: r.cause,
  hint: r.hint,
  peers: r.peers,
  blocking: r.blocking ?? true,
});

/**
 * The `validations_info` JSON string exactly as assisted-service shapes it:
 * {"<category>": [{"id", "status", "message"}]}. Remediation travels in a
 * separate field so clients that parse this one see nothing unexpected.
 */
export function validationsInfo(results: ValidationResult[], categoryOf: (id: string) => string): string {
  const out: Record<string, Array<{ id: string; status: string; message: string }>> = {};
  for (const r of results) (out[categoryOf(r.id)] ??= []).push({ id: r.id, status: r.status, message: r.message });
  return JSON.stringify(out);
}

export function remediation(results: ValidationResult[]): string {
  const out: Record<string, { cause: string; hint: string; peers?: Peer[]; blocking: boolean }> = {};
  for (const r of results) if (r.status === 'failure' && r.cause && r.hint) out[r.id] = { cause: r.cause, hint: r.hint, peers: r.peers, blocking: r.blocking };
  return JSON.stringify(out);
}
