import { isDatabaseUnavailable } from '@app/common';
import { loadDatabaseUrl } from '@app/config';
import { ensureDatabase, MigrationOptions, runMigrations } from '@app/persistence';
import { CliCommand } from '../cli-command';
import { CliFailure } from '../cli-failure';
import { CliIo } from '../cli-io';
import { databaseErrorCode } from '../database-error-code';
import { describeDatabase } from '../describe-database';
import { formatJsonLine } from '../format-json-line';
import { parseFlags } from '../parse-flags';
import { withDataSource } from '../with-data-source';

/** Applies pending migrations under the advisory lock, creating the database when it does not exist. */
export const migrateCommand: CliCommand = {
  name: 'migrate',
  synopsis: '[--json]',
  summary: 'Create the database if missing and apply pending migrations',
  async run(args: readonly string[], io: CliIo): Promise<void> {
    const flags = parseFlags(args, { json: 'boolean' });
    const databaseUrl = loadDatabaseUrl();
    const applied = await migrate(databaseUrl, io);
    if (flags.json) {
      io.out(formatJsonLine({ applied }));
    } else if (applied.length === 0) {
      io.out(`No pending migrations: ${describeDatabase(databaseUrl)} is up to date.`);
    } else {
      io.out(`Applied ${applied.length} migration(s) to ${describeDatabase(databaseUrl)}:`);
      for (const name of applied) io.out(`  ${name}`);
    }
  },
};

async function migrate(databaseUrl: string, io: CliIo): Promise<string[]> {
  const onRetry: MigrationOptions['onRetry'] = ({ attempt, attempts, delayMs, message }) =>
    io.err(`A table the migrations change is locked by another transaction (${message}); nothing was applied, trying again in ${delayMs / 1000} s (attempt ${attempt} of ${attempts}).`);
  const apply = () => withDataSource(databaseUrl, async (dataSource) => (await runMigrations(dataSource, { onRetry })).map((m) => m.name));
  try {
    return await apply();
  } catch (error) {
    // Only a missing database is created; connecting to the admin database is
    // not tried otherwise, so hosted Postgres without that right still works.
    if (databaseErrorCode(error) !== '3D000') throw error;
  }
  let created: boolean;
  try {
    created = await ensureDatabase(databaseUrl);
  } catch (error) {
    // The server away or full (a restart between the two connections, too many connections): explained as any other.
    if (isDatabaseUnavailable(error)) throw error;
    // Said of the admin database it was asked through, not of DATABASE_URL's own: its credentials may be fine there.
    const reason = error instanceof Error ? error.message : String(error);
    throw new CliFailure(
      `${describeDatabase(databaseUrl)} does not exist, and it could not be created through the server's "postgres" database ` +
        `(${reason}): create it yourself (CREATE DATABASE), then run migrate again`,
    );
  }
  if (created) io.err(`Created database ${describeDatabase(databaseUrl)}.`);
  return apply();
}
