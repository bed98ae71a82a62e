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
  type PgFields = { code?: unknown; message?: unknown; routine?: unknown };
  const candidate = error as (PgFields & { driverError?: PgFields }) | null | undefined;
  const code = candidate?.driverError?.code ?? candidate?.code;
  if (typeof code !== 'string') return false;
  if (DATA_CODES.has(code)) return true;
  if (code !== '22P02') return false;
  // The server's own function (`json_ereport_error` in Postgres 15) is named in English whatever the server's
  // lc_messages; the message is the fallback for a server that does not send it.
  const routine = String(candidate?.driverError?.routine ?? candidate?.routine ?? '');
  const message = String(candidate?.driverError?.message ?? candidate?.message ?? '');
  return /json/i.test(routine) || message.includes('type json');
}
