import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { createDataSource } from '../../persistence/src/create-data-source';
import { failureOf } from '../../../test/support/failure-of';
import { freePort } from '../../../test/support/free-port';
import { closeLoopbackServer, loopbackServer } from '../../../test/support/loopback-server';
import { testRunResources } from '../../../test/support/test-run-id';
import { waitFor } from '../../../test/support/wait-for';
import { answeredWithError, isDatabaseUnavailable } from './database-unavailable';

/** Real failures, not shapes: what the driver and fetch raise is what the filter meets. */
describe('isDatabaseUnavailable', () => {
  /** Runs `work` against this test run's database, over a pool of one that is always closed. */
  const withTestDatabase = async (work: (dataSource: DataSource) => Promise<void>) => {
    const dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 1 });
    await dataSource.initialize();
    try {
      await work(dataSource);
    } finally {
      await dataSource.destroy();
    }
  };
  const closedUrl = async () => {
    const url = new URL(testRunResources().databaseUrl);
    url.hostname = '127.0.0.1';
    url.port = String(await freePort());
    return url.toString();
  };


  describe('Postgres out of reach', () => {
    it('is true when the data source cannot connect: the socket error, unwrapped', async () => {
      const dataSource = createDataSource({ url: await closedUrl(), poolSize: 1 });
      const error = await failureOf(() => dataSource.initialize());
      expect(error).toMatchObject({ code: 'ECONNREFUSED' });
      expect(isDatabaseUnavailable(error)).toBe(true);
    });

    it('is true when the pool gives up connecting: pg-pool wraps the timeout, its message says so', async () => {
      const silent = await loopbackServer();
      const pool = new Pool({ host: '127.0.0.1', port: silent.port, user: 'postgres', connectionTimeoutMillis: 100 });
      try {
        const error = await failureOf(() => pool.query('SELECT 1'));
        expect(isDatabaseUnavailable(error)).toBe(true);
      } finally {
        await pool.end();
        await closeLoopbackServer(silent);
      }
    });

    it('is true when the connection under a query is terminated by the server', async () => {
      const dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 1 });
      const admin = createDataSource({ url: testRunResources().databaseUrl, poolSize: 1 });
      await Promise.all([dataSource.initialize(), admin.initialize()]);
      try {
        const [{ pid }] = await dataSource.query('SELECT pg_backend_pid() AS pid');
        // Terminated while its query runs: ended between two queries instead, the pool may notice first, drop the
        // connection and run the next query on a new one, which succeeds.
        const running = failureOf(() => dataSource.query('SELECT pg_sleep(30)'));
        await waitFor(async () => {
          const [{ active }] = await admin.query(`SELECT count(*)::int AS active FROM pg_stat_activity WHERE pid = $1 AND state = 'active'`, [pid]);
          return active === 1 ? true : undefined;
        });
        await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        const error = await running;
        expect(error).toMatchObject({ driverError: expect.objectContaining({ code: '57P01' }) });
        expect(isDatabaseUnavailable(error)).toBe(true);
      } finally {
        await Promise.all([dataSource.destroy(), admin.destroy()]);
      }
    });
  });

  describe('Postgres reachable but not serving', () => {
    it.each([
      ['a statement past statement_timeout (an overloaded server)', `SET LOCAL statement_timeout = 20; SELECT pg_sleep(1)`],
      ['a write on a read-only server (a standby after a failover)', `SET LOCAL transaction_read_only = on; CREATE TEMP TABLE never (x int)`],
    ])('is true for %s: nothing was stored, and a retry may work', (_case, statements) =>
      withTestDatabase(async (dataSource) => {
        const error = await failureOf(() =>
          dataSource.transaction(async (manager) => {
            for (const statement of statements.split('; ')) await manager.query(statement);
          }),
        );
        expect(isDatabaseUnavailable(error)).toBe(true);
      }),
    );
  });

  describe('not the database', () => {
    it('is false for a query Postgres refuses', () =>
      withTestDatabase(async (dataSource) => {
        const error = await failureOf(() => dataSource.query('SELECT * FROM no_such_table'));
        expect(error).toMatchObject({ name: 'QueryFailedError', driverError: { code: '42P01' } });
        expect(isDatabaseUnavailable(error)).toBe(false);
      }));

    it('is false for an HTTP request refused by a carrier, however deep its socket error sits', async () => {
      const fetchError = await failureOf(async () => fetch(`http://127.0.0.1:${await freePort()}/`));
      expect(fetchError).toMatchObject({ name: 'TypeError', cause: { code: 'ECONNREFUSED' } });
      // As a carrier client wraps it (the request that failed, the fetch failure as its cause).
      const carrierError = new Error('Twilio request POST /Calls.json failed: ECONNREFUSED', { cause: fetchError });
      expect(isDatabaseUnavailable(fetchError)).toBe(false);
      expect(isDatabaseUnavailable(carrierError)).toBe(false);
      expect(isDatabaseUnavailable(new Error('no answer (ECONNREFUSED)', { cause: carrierError }))).toBe(false);
    });

    it('is false for an HTTP request whose connection a carrier reset', async () => {
      const resetting = await loopbackServer((socket) => socket.resetAndDestroy());
      try {
        const fetchError = await failureOf(() => fetch(`http://127.0.0.1:${resetting.port}/`, { method: 'POST', body: 'Status=canceled' }));
        expect(fetchError).toMatchObject({ name: 'TypeError', cause: { code: 'ECONNRESET' } });
        expect(isDatabaseUnavailable(new Error('Telnyx POST /v2/calls/x/actions/hangup failed', { cause: fetchError }))).toBe(false);
      } finally {
        await closeLoopbackServer(resetting);
      }
    });
  });
});

describe('answeredWithError', () => {
  it("tells Postgres' own error answers from answers lost on the way, through TypeORM's wrapping", async () => {
    const dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 1 });
    await dataSource.initialize();
    try {
      const refused = await failureOf(() => dataSource.query(`SELECT 1/0`));
      expect(answeredWithError(refused)).toBe(true);
    } finally {
      await dataSource.destroy();
    }
    expect(answeredWithError(new Error('Connection terminated unexpectedly'))).toBe(false);
    // A connection ended under the statement, by a pooler or a server shutting down: it may have committed first.
    expect(answeredWithError(Object.assign(new Error('server conn crashed?'), { code: '08P01', severity: 'ERROR' }))).toBe(false);
    expect(answeredWithError(Object.assign(new Error('terminating connection'), { code: '57P01', severity: 'FATAL' }))).toBe(false);
    expect(answeredWithError(Object.assign(new Error('read-only'), { code: '25006', severity: 'ERROR' }))).toBe(true);
    expect(answeredWithError(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))).toBe(false);
  });
});

