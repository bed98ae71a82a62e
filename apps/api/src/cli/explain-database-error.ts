import { CliFailure } from './cli-failure';
import { databaseErrorCode } from './database-error-code';
import { describeDatabase } from './describe-database';

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH']);

/** Turns the database errors an operator can fix into a `CliFailure` that says how; others pass through. */
export function explainDatabaseError(error: unknown, databaseUrl: string, options: { makesSchema?: boolean } = {}): unknown {
  const code = databaseErrorCode(error);
  const where = describeDatabase(databaseUrl);
  const detail = error instanceof Error ? error.message : String(error);
  if (code && UNREACHABLE.has(code)) {
    return new CliFailure(`cannot reach Postgres at ${where} (DATABASE_URL): ${detail || code}`);
  }
  if (code === '28P01' || code === '28000') {
    return new CliFailure(`Postgres at ${where} refused the credentials in DATABASE_URL: ${detail}`);
  }
  // pg's own words when the server asks for a password (SCRAM) and the URL gives none: no SQLSTATE to go by.
  if (/client password must be a string/.test(detail)) {
    return new CliFailure(
      `Postgres at ${where} asks for a password and DATABASE_URL has none: put one in it (postgres://user:password@host:port/db), ` +
        'or let Postgres trust local connections (a "trust" line for 127.0.0.1 in pg_hba.conf)',
    );
  }
  if (code === '3D000' || (code === '42P01' && !options.makesSchema)) {
    return new CliFailure(`the database ${where} has no schema yet: run "npm run cli -- migrate" first`);
  }
  return error;
}
