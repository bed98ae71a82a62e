import { DataSource } from 'typeorm';

/**
 * The migrations of this release that the database has not had yet, oldest
 * first (all of them for a database without the migrations table). Read
 * only: unlike TypeORM's `showMigrations`, it creates nothing.
 */
export async function unappliedMigrations(dataSource: DataSource): Promise<string[]> {
  const table = dataSource.options.migrationsTableName ?? 'migrations';
  const known = dataSource.migrations.map((migration) => migration.name ?? migration.constructor.name);
  let rows: { name: string }[];
  try {
    rows = await dataSource.query(`SELECT name FROM "${table}"`);
  } catch (error) {
    if ((error as { code?: unknown }).code === '42P01') return known;
    throw error;
  }
  const applied = new Set(rows.map((row) => row.name));
  return known.filter((name) => !applied.has(name));
}

/** Refuses to run an app against a schema older than its code: every statement that uses what is missing would fail. */
export class SchemaBehind extends Error {
  constructor(readonly missing: string[]) {
    super(
      `the database schema is behind this release: ${missing.length} migration${missing.length === 1 ? '' : 's'} not applied ` +
        `(${missing.join(', ')}); run "npm run cli -- migrate" (in the image: node dist/apps/api/apps/api/src/cli/main.js migrate) first`,
    );
    this.name = 'SchemaBehind';
  }
}

/** Initializes `dataSource` and checks its schema: `SchemaBehind` (the pool closed) when migrations are missing. */
export async function connectMigrated(dataSource: DataSource): Promise<DataSource> {
  await dataSource.initialize();
  const missing = await unappliedMigrations(dataSource).catch(async (error: unknown) => {
    await dataSource.destroy();
    throw error;
  });
  if (missing.length > 0) {
    await dataSource.destroy();
    throw new SchemaBehind(missing);
  }
  return dataSource;
}
