/** Node and Postgres error codes that mean "the database cannot serve this now", not "the query is wrong". */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EPIPE',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
  // Reachable but not answering, nothing stored: a statement past statement_timeout (an overloaded or locked-up
  // server), a write sent to a server that became a read-only standby in a failover, a database being dropped.
  '57014', // query_canceled
  '25006', // read_only_sql_transaction
  '57P04', // database_dropped
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);
const CONNECTION_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error',
  'Connection is not established',
];

const NONE: ReadonlySet<string> = new Set();

/**
 * A statement past its statement_timeout: the server answers, only not that
 * statement in time. It may be the statement's own doing (a row lock held, a
 * slow plan), so work that would wait out an unreachable database for hours
 * leaves it out (`isDatabaseUnavailable(error, SLOW_STATEMENT)`).
 */
export const SLOW_STATEMENT: ReadonlySet<string> = new Set(['57014']);

/**
 * True when `error` (or the driver error TypeORM wraps) says Postgres is
 * unreachable; `except`: codes not to count.
 *
 * Only `driverError` is followed, not `cause`: the socket codes above are any
 * socket's, and an HTTP client's failure carries its socket error as a cause
 * (fetch's `TypeError('fetch failed')`, a carrier's request wrapping that), so
 * following causes took a carrier that could not be reached for the database.
 * The driver raises its own failures unwrapped (the socket error, a Postgres
 * error with its SQLSTATE, pg-pool's "Connection terminated due to connection
 * timeout"), and TypeORM wraps them in `driverError` only.
 */
export function isDatabaseUnavailable(error: unknown, except: ReadonlySet<string> = NONE): boolean {
  for (let current: unknown = error, depth = 0; current && depth < 4; depth++) {
    const candidate = current as { code?: unknown; message?: unknown; driverError?: unknown };
    if (typeof candidate.code === 'string' && CONNECTION_CODES.has(candidate.code)) return !except.has(candidate.code);
    if (typeof candidate.message === 'string' && CONNECTION_MESSAGES.some((text) => (candidate.message as string).includes(text))) {
      return true;
    }
    current = candidate.driverError;
  }
  return false;
}

/**
 * True when Postgres itself refused the statement (an ErrorResponse of
 * severity ERROR: a read-only server, a statement past its timeout, a
 * constraint), as opposed to an answer lost on the way (a socket error, a
 * timeout on our side) or a connection ended under it (class 08, which a
 * pooler such as PgBouncer sends of its own, perhaps after the server
 * committed; 57P, a server shutting down; severity FATAL). A single
 * statement outside a transaction that Postgres refused did not commit;
 * one whose answer was lost may have.
 */
export function answeredWithError(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current && depth < 4; depth++) {
    const candidate = current as { code?: unknown; severity?: unknown; driverError?: unknown };
    if (typeof candidate.code === 'string' && /^[0-9A-Z]{5}$/.test(candidate.code) && typeof candidate.severity === 'string') {
      return candidate.severity === 'ERROR' && !candidate.code.startsWith('08') && !candidate.code.startsWith('57P');
    }
    current = candidate.driverError;
  }
  return false;
}
