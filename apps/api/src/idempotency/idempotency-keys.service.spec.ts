import { createHash, randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createDataSource } from '@app/persistence';
import { testRunResources } from '../../../../test/support/test-run-id';
import { AuthenticatedKey } from '../auth/authenticated-key';
import { canonicalJson } from './canonical-json';
import { IdempotencyKeys } from './idempotency-keys.service';

describe('IdempotencyKeys.fingerprint', () => {
  it('is the SHA-256 in hex of the endpoint and the canonical body, as the keys already held were written', () => {
    const body = { phone_number: '+14155552671', initial_context: { z: 'é', a: [1, { b: null }] } };
    const endpoint = 'production 3f0b6c1e-8d9a-4c52-9a57-0f3c2b1d4e5a';
    const written = createHash('sha256').update(`${endpoint}\n${canonicalJson(body)}`).digest('hex');
    expect(IdempotencyKeys.fingerprint(endpoint, body)).toBe(written);
    expect(IdempotencyKeys.fingerprint(endpoint, { ...body, phone_number: '+14155552672' })).not.toBe(written);
  });
});

/** Against this test run's Postgres: what a held key tells the request that finds it (claims: see WorkflowRunStore's spec). */
describe('IdempotencyKeys.earlierRun', () => {
  let dataSource: DataSource;
  let keys: IdempotencyKeys;
  const ORG = 900_101;
  const BODY = 'a'.repeat(64);
  const OTHER_BODY = 'b'.repeat(64);

  beforeAll(async () => {
    dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 2 });
    await dataSource.initialize();
    keys = new IdempotencyKeys(dataSource);
  });
  afterAll(() => dataSource?.destroy());

  /** A key row as a request left it; answers the key. */
  const held = async (runId: number | null, requestHash: string, lockedFor = '-1 minute', expiresIn = '1 day'): Promise<string> => {
    const key = `k-${randomUUID()}`;
    await dataSource.query(
      `INSERT INTO idempotency_keys (organization_id, key, request_hash, run_id, locked_until, expires_at)
       VALUES ($1, $2, $3, $4, now() + $5::interval, now() + $6::interval)`,
      [ORG, key, requestHash, runId, lockedFor, expiresIn],
    );
    return key;
  };
  const callerOf = (organizationId: number, workflowIds: number[] | null = null): AuthenticatedKey => ({
    id: 1,
    organizationId,
    role: workflowIds === null ? 'admin' : 'trigger',
    workflowIds,
  });
  const admin = callerOf(ORG);
  const outcomeOf = (answer: Promise<number | null>) =>
    answer.then(
      (runId) => ({ runId }),
      (error: { status?: number; code?: string }) => ({ status: error.status, code: error.code }),
    );

  it("answers the earlier request's run to a repeat with the same body", async () => {
    const key = await held(4242, BODY);
    expect(await keys.earlierRun(admin, { key, requestHash: BODY })).toBe(4242);
  });

  it('answers 422 to the same key with another body, whether or not the first stored a run', async () => {
    for (const runId of [4242, null]) {
      const key = await held(runId, BODY, '30 seconds');
      expect(await outcomeOf(keys.earlierRun(admin, { key, requestHash: OTHER_BODY }))).toEqual({ status: 422, code: 'idempotency_key_reused' });
    }
  });

  it('answers 409 to a key claimed without a run that is not presumed dead yet', async () => {
    const key = await held(null, BODY, '30 seconds');
    expect(await outcomeOf(keys.earlierRun(admin, { key, requestHash: BODY }))).toEqual({ status: 409, code: 'idempotency_request_in_flight' });
  });

  it('tells a key limited to some agents nothing of a run it cannot see, and to wait while the run is not stored', async () => {
    const limited = callerOf(ORG, [1]);
    // 4242 names no stored run here, so its agent is none the limited key may use.
    for (const requestHash of [BODY, OTHER_BODY]) {
      const key = await held(4242, BODY);
      expect(await outcomeOf(keys.earlierRun(limited, { key, requestHash }))).toEqual({ status: 403, code: 'forbidden' });
      const pending = await held(null, BODY, '30 seconds');
      expect(await outcomeOf(keys.earlierRun(limited, { key: pending, requestHash }))).toEqual({
        status: 409,
        code: 'idempotency_request_in_flight',
      });
    }
  });

  it('answers nothing for a key never used, an expired one, or one of another organization', async () => {
    const expired = await held(4343, BODY, '-2 days', '-1 day');
    const elsewhere = await held(4444, BODY);
    expect(await keys.earlierRun(admin, { key: `k-${randomUUID()}`, requestHash: BODY })).toBeNull();
    expect(await keys.earlierRun(admin, { key: expired, requestHash: BODY })).toBeNull();
    expect(await keys.earlierRun(callerOf(ORG + 1), { key: elsewhere, requestHash: BODY })).toBeNull();
  });
});
