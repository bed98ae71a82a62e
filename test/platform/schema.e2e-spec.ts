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
