import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { isDatabaseUnavailable } from '../../common/src/database-unavailable';
import { TcpProxy } from '../../../test/support/tcp-proxy';
import { testRunResources } from '../../../test/support/test-run-id';
import { withoutReadTimeout } from './answering-client';
import { createDataSource } from './create-data-source';
import { preparedQuery } from './prepared-query';

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

  describe('a connection Postgres stops answering on', () => {
    let proxy: TcpProxy;
    let silent: DataSource;

    beforeAll(async () => {
      const url = new URL(testRunResources().databaseUrl);
      proxy = new TcpProxy(url.hostname, Number(url.port || 5432));
      url.port = String(await proxy.start());
      url.hostname = '127.0.0.1';
      silent = createDataSource({ url: url.toString(), poolSize: 1, statementTimeoutMs: 1_000, readTimeoutMs: 1_500 });
      await silent.initialize();
    });
    afterAll(async () => {
      await silent?.destroy().catch(() => undefined);
      await proxy?.stop();
    });

    /** Fails like a lost connection once the read timeout is past, not when the kernel gives up on the socket. */
    async function expectGivenUp(query: () => Promise<unknown>): Promise<void> {
      const startedAt = Date.now();
      const error = await query().then(
        () => null,
        (failure: unknown) => failure,
      );
      const elapsedMs = Date.now() - startedAt;
      expect(error).not.toBeNull();
      expect(isDatabaseUnavailable(error)).toBe(true);
      expect(elapsedMs).toBeGreaterThanOrEqual(1_400);
      expect(elapsedMs).toBeLessThan(10_000);
    }

    it('is given up after the read timeout, and the pool replaces it', async () => {
      expect(await silent.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
      proxy.silenceOpenConnections();
      await expectGivenUp(() => silent.query('SELECT 2 AS two'));
      // The one pooled connection was dropped: the next statement gets a new one.
      expect(await silent.query('SELECT 3 AS three')).toEqual([{ three: 3 }]);
    });

    it('is given up on the pool-level path the prepared statements take too', async () => {
      expect(await preparedQuery(silent, 'SELECT $1::int AS n', [4])).toEqual([{ n: 4 }]);
      proxy.silenceOpenConnections();
      await expectGivenUp(() => preparedQuery(silent, 'SELECT $1::int AS n', [5]));
      expect(await preparedQuery(silent, 'SELECT $1::int AS n', [6])).toEqual([{ n: 6 }]);
    });
  });

  it('lifts the read timeout for work that may rightly wait long (migrations), and puts it back after', async () => {
    const slow = createDataSource({ url: testRunResources().databaseUrl, poolSize: 1, statementTimeoutMs: 0, readTimeoutMs: 300 });
    await slow.initialize();
    const runner = slow.createQueryRunner();
    try {
      const connection: unknown = await runner.connect();
      expect(await withoutReadTimeout(connection, () => runner.query('SELECT 1 AS slept FROM pg_sleep(0.6)'))).toEqual([{ slept: 1 }]);
      const error = await runner.query('SELECT pg_sleep(0.6)').catch((failure: unknown) => failure);
      expect(isDatabaseUnavailable(error)).toBe(true);
    } finally {
      await runner.release().catch(() => undefined);
      await slow.destroy().catch(() => undefined);
    }
  });
});
