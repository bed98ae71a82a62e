import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createDataSource } from '@app/persistence';
import { testRunResources } from '../../../../test/support/test-run-id';
import { IdempotencyKeys } from './idempotency-keys.service';

/**
 * Against this test run's Postgres. Claims made in one turn of the event loop
 * go out as one statement, as concurrent requests' do.
 */
describe('IdempotencyKeys claims', () => {
  let dataSource: DataSource;
  let keys: IdempotencyKeys;
  const ORG = 900_001;
  const BODY = 'a'.repeat(64);
  const OTHER_BODY = 'b'.repeat(64);

  beforeAll(async () => {
    dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 4 });
    await dataSource.initialize();
    keys = new IdempotencyKeys(dataSource);
  });
  afterAll(() => dataSource?.destroy());

  const outcomeOf = (claim: Promise<unknown>) =>
    claim.then(
      (value) => value,
      (error: { status?: number; code?: string }) => ({ status: error.status, code: error.code }),
    );

  it('claims every key of concurrent first requests, each holding its own body and no run yet', async () => {
    const group = Array.from({ length: 60 }, (_, index) => ({ key: `k-${randomUUID()}`, fingerprint: index % 2 ? BODY : OTHER_BODY }));
    const answers = await Promise.all(group.map(({ key, fingerprint }) => keys.claim(ORG, key, fingerprint)));
    expect(answers).toEqual(group.map(() => ({ kind: 'claimed' })));
    const rows: Array<{ key: string; request_hash: string; run_id: number | null }> = await dataSource.query(
      `SELECT key, request_hash, run_id FROM idempotency_keys WHERE organization_id = $1 AND key = ANY($2::text[])`,
      [ORG, group.map(({ key }) => key)],
    );
    expect(new Map(rows.map((row) => [row.key, [row.request_hash, row.run_id]]))).toEqual(
      new Map(group.map(({ key, fingerprint }) => [key, [fingerprint, null]])),
    );
  });

  it('sends the claims made in one turn as one statement', async () => {
    const pool = (dataSource.driver as unknown as { master: { query: (...args: unknown[]) => unknown } }).master;
    const query = jest.spyOn(pool, 'query');
    try {
      await Promise.all(Array.from({ length: 30 }, () => keys.claim(ORG, `k-${randomUUID()}`, BODY)));
      const claims = query.mock.calls.filter(([config]) => /INSERT INTO idempotency_keys/.test(JSON.stringify(config)));
      expect(claims).toHaveLength(1);
    } finally {
      query.mockRestore();
    }
  });

  it('claims a key that comes twice in one group for the first request only; the second finds it in flight', async () => {
    const key = `k-${randomUUID()}`;
    const [first, second] = await Promise.all([outcomeOf(keys.claim(ORG, key, BODY)), outcomeOf(keys.claim(ORG, key, BODY))]);
    expect(first).toEqual({ kind: 'claimed' });
    expect(second).toEqual({ status: 409, code: 'idempotency_request_in_flight' });
  });

  it('answers 422 to the second request of a group that brings the same key with another body', async () => {
    const key = `k-${randomUUID()}`;
    const answers = await Promise.all([outcomeOf(keys.claim(ORG, key, BODY)), outcomeOf(keys.claim(ORG, key, OTHER_BODY))]);
    expect(answers).toEqual([{ kind: 'claimed' }, { status: 422, code: 'idempotency_key_reused' }]);
  });

  it('keeps one key of two organizations in one group apart', async () => {
    const key = `k-${randomUUID()}`;
    const answers = await Promise.all([keys.claim(ORG, key, BODY), keys.claim(ORG + 1, key, OTHER_BODY)]);
    expect(answers).toEqual([{ kind: 'claimed' }, { kind: 'claimed' }]);
  });

  it('in one group, replays a finished key, takes over an expired one and a dead one, and claims a new one', async () => {
    const [finished, expired, dead, fresh] = Array.from({ length: 4 }, () => `k-${randomUUID()}`);
    await dataSource.query(
      `INSERT INTO idempotency_keys (organization_id, key, request_hash, run_id, locked_until, expires_at) VALUES
         ($1, $2, $5, 4242, now() - interval '1 minute', now() + interval '1 day'),
         ($1, $3, $6, 4343, now() - interval '2 days', now() - interval '1 day'),
         ($1, $4, $5, NULL, now() - interval '1 second', now() + interval '1 day')`,
      [ORG, finished, expired, dead, BODY, OTHER_BODY],
    );
    const answers = await Promise.all([
      keys.claim(ORG, finished, BODY),
      keys.claim(ORG, expired, BODY),
      keys.claim(ORG, dead, BODY),
      keys.claim(ORG, fresh, BODY),
    ]);
    expect(answers).toEqual([{ kind: 'replay', runId: 4242 }, { kind: 'claimed' }, { kind: 'claimed' }, { kind: 'claimed' }]);
    const [taken] = await dataSource.query(`SELECT request_hash, run_id FROM idempotency_keys WHERE organization_id = $1 AND key = $2`, [
      ORG,
      expired,
    ]);
    expect(taken).toEqual({ request_hash: BODY, run_id: null });
  });
});
