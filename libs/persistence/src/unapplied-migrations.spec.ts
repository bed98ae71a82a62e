import { DataSource, MigrationInterface } from 'typeorm';
import { scratchDatabaseUrl, testRunResources } from '../../../test/support/test-run-id';
import { createDataSource } from './create-data-source';
import { MIGRATIONS } from './migrations';
import { connectMigrated, SchemaBehind, unappliedMigrations } from './unapplied-migrations';

/** A migration of a release newer than the database. */
class NextRelease9999999999999 implements MigrationInterface {
  name = 'NextRelease9999999999999';
  async up(): Promise<void> {}
  async down(): Promise<void> {}
}

const withMigrations = (url: string, migrations: Array<new () => MigrationInterface>) =>
  new DataSource({ ...createDataSource({ url, poolSize: 1 }).options, migrations } as ConstructorParameters<typeof DataSource>[0]);

describe('a schema behind the release', () => {
  const migrationNames = MIGRATIONS.map((migration) => migration.name);

  it('finds nothing missing in the migrated test database', async () => {
    const current = await connectMigrated(createDataSource({ url: testRunResources().databaseUrl, poolSize: 1 }));
    try {
      expect(await unappliedMigrations(current)).toEqual([]);
    } finally {
      await current.destroy();
    }
  });

  it('refuses to connect an app whose release has a migration the database has not had, and closes the pool', async () => {
    const ahead = withMigrations(testRunResources().databaseUrl, [...MIGRATIONS, NextRelease9999999999999]);

    const refused = connectMigrated(ahead);

    await expect(refused).rejects.toBeInstanceOf(SchemaBehind);
    await expect(refused).rejects.toThrow(/1 migration not applied \(NextRelease9999999999999\); run "npm run cli -- migrate"/);
    expect(ahead.isInitialized).toBe(false);
  });

  describe('a database that has never been migrated', () => {
    const url = scratchDatabaseUrl('unmigrated');
    const name = new URL(url).pathname.slice(1);
    let admin: DataSource;

    beforeAll(async () => {
      admin = createDataSource({ url: testRunResources().databaseUrl, poolSize: 1 });
      await admin.initialize();
      await admin.query(`DROP DATABASE IF EXISTS "${name}"`);
      await admin.query(`CREATE DATABASE "${name}"`);
    });
    afterAll(async () => {
      await admin.query(`DROP DATABASE IF EXISTS "${name}"`);
      await admin.destroy();
    });

    it('lists every migration, and creates nothing', async () => {
      const empty = createDataSource({ url, poolSize: 1 });
      await empty.initialize();
      try {
        expect(await unappliedMigrations(empty)).toEqual(migrationNames);
        expect(await empty.query(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`)).toEqual([{ n: 0 }]);
      } finally {
        await empty.destroy();
      }
      await expect(connectMigrated(createDataSource({ url, poolSize: 1 }))).rejects.toThrow(
        `${migrationNames.length} migrations not applied (${migrationNames.join(', ')})`,
      );
    });
  });
});
