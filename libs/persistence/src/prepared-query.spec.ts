import { DataSource } from 'typeorm';
import { testRunResources } from '../../../test/support/test-run-id';
import { createDataSource } from './create-data-source';
import { preparedQuery } from './prepared-query';

/** Against this test run's Postgres, over a pool of one connection so what it prepared can be seen. */
describe('preparedQuery', () => {
  let dataSource: DataSource;

  beforeAll(async () => {
    dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 1 });
    await dataSource.initialize();
  });
  afterAll(() => dataSource?.destroy());

  const prepared = async (): Promise<Array<{ name: string; statement: string }>> =>
    dataSource.query(`SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'va\\_%' ORDER BY statement`);

  it('prepares each statement text once per connection and answers its rows', async () => {
    const doubled = 'SELECT n * 2 AS doubled FROM unnest($1::integer[]) AS n ORDER BY n';
    const tripled = 'SELECT n * 3 AS tripled FROM unnest($1::integer[]) AS n ORDER BY n';
    expect(await preparedQuery(dataSource, doubled, [[1, 2]])).toEqual([{ doubled: 2 }, { doubled: 4 }]);
    expect(await preparedQuery(dataSource, doubled, [[5]])).toEqual([{ doubled: 10 }]);
    expect(await preparedQuery(dataSource, tripled, [[2]])).toEqual([{ tripled: 6 }]);

    const statements = await prepared();
    expect(statements.map((row) => row.statement)).toEqual([doubled, tripled]);
    expect(new Set(statements.map((row) => row.name)).size).toBe(2);
  });

  it("fails with Postgres' own error and leaves the connection usable", async () => {
    const text = 'SELECT $1::integer AS n';
    await expect(preparedQuery(dataSource, text, ['not a number'])).rejects.toMatchObject({ code: '22P02' });
    expect(await preparedQuery(dataSource, text, [7])).toEqual([{ n: 7 }]);
  });
});
