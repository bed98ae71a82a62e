import { Client } from 'pg';
import { testRunResources } from '../../support/test-run-id';

/**
 * A database URL beside this run's test database that does not exist yet (for
 * commands that create and seed one from nothing), and its removal.
 */
export function scratchDatabaseUrl(suffix: string): string {
  const url = new URL(testRunResources().databaseUrl);
  url.pathname = `${url.pathname}_${suffix}`;
  return url.toString();
}

export async function dropDatabase(databaseUrl: string): Promise<void> {
  const name = new URL(databaseUrl).pathname.slice(1);
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
