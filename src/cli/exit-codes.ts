/**
 * Exit codes of `landfall`: scripts branch on these, so they are a table,
 * documented in `landfall --help` and the README from this one place.
 */
export const EXIT = {
  ok: { code: 0, meaning: 'success (install --wait: the cluster is installed)' },
  failed: { code: 1, meaning: 'the install failed or was cancelled, or an unexpected error' },
  usage: { code: 2, meaning: 'bad usage or input: unknown option, unreadable file, or the API refused the request (4xx)' },
  unreachable: { code: 3, meaning: 'the Landfall API cannot be reached (connection refused, DNS, timeout)' },
  notFound: { code: 4, meaning: 'the cluster, infra-env or file does not exist (404, or no cluster has that name)' },
  unauthorized: { code: 5, meaning: 'the API refused the credentials (401, 403): check --token / LANDFALL_TOKEN' },
  serviceError: { code: 6, meaning: 'the API failed (5xx) or answered something unreadable' },
  interrupted: { code: 130, meaning: 'interrupted (Ctrl-C)' },
} as const;

export type ExitKind = keyof typeof EXIT;

/** An error that reaches the top as one line on stderr and this exit code. */
export class CliError extends Error {
  constructor(
    readonly kind: ExitKind,
    message: string,
  ) {
    super(message);
  }
  get exitCode(): number {
    return EXIT[this.kind].code;
  }
}

/** The exit code of an HTTP error status. */
export function exitKindOfStatus(status: number): ExitKind {
  if (status === 404) return 'notFound';
  if (status === 401 || status === 403) return 'unauthorized';
  if (status >= 400 && status < 500) return 'usage';
  return 'serviceError';
}

export function exitCodesHelp(): string {
  const rows = Object.values(EXIT).map((e) => `  ${String(e.code).padEnd(4)}${e.meaning}`);
  return `Exit codes:\n${rows.join('\n')}`;
}
