/**
 * A failure the caller can act on. `code` is stable and machine-readable; the
 * exception filter maps `status` and `code` into the public error body.
 */
export class DomainError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}
