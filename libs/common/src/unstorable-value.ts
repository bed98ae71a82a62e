/**
 * Postgres data errors that only a value sent by the client can cause once
 * validation has run: text with a NUL character (22021), JSON with `\u0000`
 * (22P05) or an unpaired UTF-16 surrogate (22P02), a value too long (22001)
 * or out of range (22003). They answer 400, not 500.
 */
const DATA_CODES = new Set(['22021', '22P05', '22P02', '22001', '22003']);

/** True when `error` (or the driver error TypeORM wraps) is one of those. */
export function isUnstorableValue(error: unknown): boolean {
  const candidate = error as { code?: unknown; driverError?: { code?: unknown } } | null | undefined;
  const code = candidate?.driverError?.code ?? candidate?.code;
  return typeof code === 'string' && DATA_CODES.has(code);
}
