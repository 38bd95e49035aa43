/**
 * One error type for everything the API reports on purpose. Domain code throws
 * AppError with a code; only src/api turns codes into HTTP statuses and bodies.
 */
export const ERROR_STATUS = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable: 422,
  internal: 500,
  dependency_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'AppError';
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

export const notFound = (what: string): AppError => new AppError('not_found', `${what} not found`);
export const badRequest = (reason: string, details?: Record<string, unknown>): AppError =>
  new AppError('bad_request', reason, details);
export const conflict = (reason: string, details?: Record<string, unknown>): AppError =>
  new AppError('conflict', reason, details);
