import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { testRunResources } from '../../../test/support/test-run-id';
import { createDataSource } from './create-data-source';

const SQL = `SELECT 4294967296::bigint AS big, ARRAY[1, 4294967296, NULL]::bigint[] AS bigs, count(*) AS counted,
                    '2026-11-27T10:00:00Z'::timestamptz AS at, 7::integer AS small`;

describe('createDataSource', () => {
  let dataSource: DataSource;

  beforeAll(async () => {
    dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 1 });
    await dataSource.initialize();
  });
  afterAll(() => dataSource?.destroy());

  it('reads bigint values and arrays as numbers, other types as the driver does', async () => {
    expect(await dataSource.query(SQL)).toEqual([
      { big: 4_294_967_296, bigs: [1, 4_294_967_296, null], counted: 1, at: new Date('2026-11-27T10:00:00Z'), small: 7 },
    ]);
  });

  it("leaves the driver's global parsers alone: a client of its own still reads bigint as text", async () => {
    const client = new Client({ connectionString: testRunResources().databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query(SQL);
      expect(rows[0]).toMatchObject({ big: '4294967296', bigs: ['1', '4294967296', null], counted: '1' });
    } finally {
      await client.end();
    }
  });
});
