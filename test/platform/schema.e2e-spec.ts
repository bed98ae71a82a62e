import { createDataSource, pendingSchemaChanges } from '@app/persistence';
import { testRunResources } from '../support/test-run-id';

describe('database schema', () => {
  it('matches the entities exactly after all migrations ran', async () => {
    const dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 1 });
    await dataSource.initialize();
    try {
      expect(await pendingSchemaChanges(dataSource)).toEqual([]);
    } finally {
      await dataSource.destroy();
    }
  });
});

describe('run table maintenance', () => {
  it('vacuums and analyzes workflow_runs after 2 % of it changed, not the default 20 %', async () => {
    const dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 1 });
    await dataSource.initialize();
    try {
      const [{ reloptions }]: Array<{ reloptions: string[] | null }> = await dataSource.query(
        `SELECT reloptions FROM pg_class WHERE oid = 'workflow_runs'::regclass`,
      );
      expect(reloptions).toEqual(expect.arrayContaining(['autovacuum_vacuum_scale_factor=0.02', 'autovacuum_analyze_scale_factor=0.02']));
    } finally {
      await dataSource.destroy();
    }
  });
});
