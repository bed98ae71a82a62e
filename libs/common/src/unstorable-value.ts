/**
 * Postgres data errors that only a value sent by the client can cause once
 * validation has run: text with a NUL character (22021), JSON with `\u0000`
 * (22P05) or with an unpaired UTF-16 surrogate (22P02, for JSON only: the
 * same code for an integer or uuid would be a bug of ours). They answer 400,
 * not 500.
 */
const DATA_CODES = new Set(['22021', '22P05']);

/** True when `error` (or the driver error TypeORM wraps) is one of those. */
export function isUnstorableValue(error: unknown): boolean {
  const candidate = error as { code?: unknown; message?: unknown; driverError?: { code?: unknown; message?: unknown } } | null | undefined;
  const code = candidate?.driverError?.code ?? candidate?.code;
  const message = String(candidate?.driverError?.message ?? candidate?.message ?? '');
  if (typeof code !== 'string') return false;
  return DATA_CODES.has(code) || (code === '22P02' && message.includes('type json'));
}
