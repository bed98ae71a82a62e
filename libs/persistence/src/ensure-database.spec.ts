import { Client } from 'pg';
import { scratchDatabaseUrl, testRunResources } from '../../../test/support/test-run-id';
import { ensureDatabase } from './ensure-database';

describe('ensureDatabase', () => {
  const url = scratchDatabaseUrl('ensured');
  const name = new URL(url).pathname.slice(1);
  const admin = () => new Client({ connectionString: testRunResources().databaseUrl });
  const drop = async () => {
    const client = admin();
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS "${name}"`);
    await client.end();
  };
  beforeEach(drop);
  afterAll(drop);

  it('creates a missing database once when replicas ask together, and none of them fails', async () => {
    const created = await Promise.all(Array.from({ length: 4 }, () => ensureDatabase(url)));

    expect(created.filter(Boolean)).toHaveLength(1);
    expect(await ensureDatabase(url)).toBe(false);
  });
});
