/**
 * The infra-env's `kernel_arguments` (AS's shape: a list of
 * `{operation: append|replace|delete, value}`) applied to a live image's
 * default kernel command line, the way `coreos-installer iso kargs modify`
 * would: append adds the argument; delete removes the arguments equal to the
 * value (or, for a bare key, every `key` / `key=…`); replace sets `key=value`
 * in place of every argument with that key, or appends it when there is none.
 * The result goes into the ISO's kargs area and the iPXE kernel line.
 */
import { AppError } from '../errors';

export interface KernelArgument {
  operation: 'append' | 'replace' | 'delete';
  value: string;
}

/**
 * Arguments the discovery image itself depends on; changing them would make
 * the live system lose its rootfs or its Ignition, so they are refused up front.
 */
const RESERVED = ['coreos.liveiso', 'coreos.live.rootfs_url', 'ignition.firstboot', 'ignition.platform.id', 'ignition.config.url'];

const keyOf = (arg: string): string => arg.split('=', 1)[0]!;

/** Splits a command line into arguments, keeping double-quoted values (`a="b c"`) whole. */
export function splitKargs(line: string): string[] {
  return line.match(/(?:[^\s"]|"[^"]*")+/g) ?? [];
}

/** Throws a 400 naming the first argument that cannot be applied. */
export function checkKernelArguments(args: KernelArgument[]): void {
  for (const [i, a] of args.entries()) {
    // The schema names both fields without requiring them; an operation needs both to mean anything.
    if (!['append', 'replace', 'delete'].includes(a?.operation) || typeof a?.value !== 'string' || a.value === '') {
      throw new AppError('bad_request', `kernel_arguments[${i}]: needs an operation (append, replace or delete) and a value`, { field: `kernel_arguments[${i}]` });
    }
    if (RESERVED.includes(keyOf(a.value))) {
      throw new AppError('bad_request', `kernel_arguments[${i}]: ${keyOf(a.value)} is set by Landfall for the discovery image and cannot be changed`, { field: 'kernel_arguments' });
    }
    if (a.operation === 'replace' && !a.value.includes('=')) {
      throw new AppError('bad_request', `kernel_arguments[${i}]: replace needs key=value, got "${a.value}"`, { field: 'kernel_arguments' });
    }
  }
}

export function applyKernelArguments(defaults: string, ops: KernelArgument[] | undefined): string {
  let args = splitKargs(defaults);
  for (const op of ops ?? []) {
    const key = keyOf(op.value);
    if (op.operation === 'append') args.push(op.value);
    else if (op.operation === 'delete') args = args.filter((a) => (op.value.includes('=') ? a !== op.value : keyOf(a) !== key));
    else {
      const at = args.findIndex((a) => keyOf(a) === key);
      if (at < 0) args.push(op.value);
      else args = [...args.slice(0, at), op.value, ...args.slice(at + 1).filter((a) => keyOf(a) !== key)];
    }
  }
  return args.join(' ');
}
