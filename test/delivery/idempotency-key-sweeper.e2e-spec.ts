import { DataSource } from 'typeorm';
import { AppConfig } from '@app/config';
import { createDataSource } from '@app/persistence';
import { RedisClient } from '@app/queue';
import { IdempotencyKeySweeper, SWEEP_BATCH } from '../../apps/dialer/src/recovery/idempotency-key-sweeper.service';
import { createOrganization } from '../support/fixtures';
import { testRunResources } from '../support/test-run-id';

/** Expired Idempotency-Keys are deleted on a task of their own, all of a backlog in one round, never waiting on a request. */
describe('IdempotencyKeySweeper', () => {
  let dataSource: DataSource;
  let sweeper: IdempotencyKeySweeper;
  let organizationId: number;

  beforeAll(async () => {
    dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 3 });
    await dataSource.initialize();
    ({ organizationId } = await createOrganization(dataSource, 'Sweeper'));
    // Not started: each test runs its rounds by hand.
    sweeper = new IdempotencyKeySweeper(dataSource, {} as RedisClient, { reaperIntervalMs: 5_000 } as AppConfig);
  });
  afterAll(() => dataSource?.destroy());

  /** `count` keys of this test's organization, named `${prefix}-n`, expired or not. */
  const seedKeys = (prefix: string, count: number, expired: boolean) =>
    dataSource.query(
      `INSERT INTO idempotency_keys (organization_id, key, request_hash, run_id, locked_until, expires_at)
       SELECT $1, $2 || '-' || n, repeat('a', 64), NULL, now(), now() + make_interval(hours => CASE WHEN $4 THEN -1 ELSE 23 END)
         FROM generate_series(1, $3) AS n`,
      [organizationId, prefix, count, expired],
    );
  const countKeys = async (prefix: string) =>
    Number(
      (await dataSource.query(`SELECT count(*) AS n FROM idempotency_keys WHERE organization_id = $1 AND key LIKE $2`, [organizationId, `${prefix}-%`]))[0].n,
    );

  it('deletes a backlog of expired keys larger than one statement in one round, and leaves live keys', async () => {
    const backlog = 2 * SWEEP_BATCH + 1_234;
    await seedKeys('old', backlog, true);
    await seedKeys('live', 50, false);
    expect(await sweeper.sweep()).toBeGreaterThanOrEqual(backlog);
    expect(await countKeys('old')).toBe(0);
    expect(await countKeys('live')).toBe(50);
  });

  it('skips an expired key a request holds instead of waiting for it, and deletes it in a later round', async () => {
    await seedKeys('held', 3, true);
    const holder = dataSource.createQueryRunner();
    await holder.connect();
    try {
      await holder.startTransaction();
      await holder.query(`SELECT 1 FROM idempotency_keys WHERE organization_id = $1 AND key = 'held-1' FOR UPDATE`, [organizationId]);
      const startedAt = Date.now();
      await sweeper.sweep();
      // Not waited for: the lock is still held, and the round is over.
      expect(Date.now() - startedAt).toBeLessThan(5_000);
      expect(await countKeys('held')).toBe(1);
      await holder.commitTransaction();
    } finally {
      await holder.release();
    }
    await sweeper.sweep();
    expect(await countKeys('held')).toBe(0);
  });

  it('stops between statements once the dialer is stopping', async () => {
    await seedKeys('stopping', SWEEP_BATCH + 10, true);
    const stopping = new AbortController();
    stopping.abort();
    expect(await sweeper.sweep(stopping.signal)).toBe(0);
    expect(await countKeys('stopping')).toBe(SWEEP_BATCH + 10);
    await sweeper.sweep();
    expect(await countKeys('stopping')).toBe(0);
  });
});
