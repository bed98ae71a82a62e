import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { testRunResources } from '../../../test/support/test-run-id';
import { createDataSource } from './create-data-source';
import { WorkflowRunStore } from './workflow-run.store';

/** Against this test run's Postgres: the grouped writes stay conditional per run. */
describe('WorkflowRunStore grouped writes', () => {
  let dataSource: DataSource;
  let store: WorkflowRunStore;

  beforeAll(async () => {
    dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 4 });
    await dataSource.initialize();
    store = new WorkflowRunStore(dataSource);
  });
  afterAll(() => dataSource?.destroy());

  const queuedRuns = (count: number) =>
    store.insertQueued(
      Array.from({ length: count }, () => ({
        organizationId: 1,
        workflowId: 1,
        environment: 'test' as const,
        triggerUuid: randomUUID(),
        apiKeyId: 1,
        telephonyConfigurationId: 1,
        provider: 'sandbox',
        phoneNumber: '+14155550100',
        initialContext: {},
      })),
    );

  it('stores a batch of runs each with its own values, answers their ids in the order given and points each idempotency key at its run', async () => {
    const keys = [`k-${randomUUID()}`, `k-${randomUUID()}`];
    await dataSource.query(
      `INSERT INTO idempotency_keys (organization_id, key, request_hash, locked_until, expires_at)
       SELECT 1, unnest($1::text[]), repeat('0', 64), now() + interval '1 minute', now() + interval '1 day'`,
      [keys],
    );
    const runs = Array.from({ length: 60 }, (_, index) => ({
      organizationId: 1,
      workflowId: 1,
      environment: (index % 2 ? 'test' : 'production') as 'test' | 'production',
      triggerUuid: randomUUID(),
      apiKeyId: 1,
      telephonyConfigurationId: 1,
      provider: 'sandbox',
      phoneNumber: `+1415555${String(index).padStart(4, '0')}`,
      initialContext: { index, quote: 'say "hi", \\ then {stop}', nested: { list: [index, null, 'ü'] } },
      idempotencyKey: index === 7 ? keys[0] : index === 41 ? keys[1] : undefined,
    }));

    const ids = await store.insertQueued(runs);

    expect(ids).toHaveLength(60);
    expect(new Set(ids).size).toBe(60);
    const stored = new Map((await store.findManyById(ids)).map((run) => [run.id, run]));
    ids.forEach((id, index) => {
      expect(stored.get(id)).toMatchObject({
        name: `WR-API-${id}`,
        status: 'queued',
        environment: runs[index].environment,
        telephonyConfigurationId: runs[index].telephonyConfigurationId,
        phoneNumber: runs[index].phoneNumber,
        initialContext: runs[index].initialContext,
      });
    });
    const keyed: Array<{ key: string; run_id: number }> = await dataSource.query(
      'SELECT key, run_id FROM idempotency_keys WHERE organization_id = 1 AND key = ANY($1::text[]) ORDER BY key',
      [keys],
    );
    expect(new Map(keyed.map((row) => [row.key, row.run_id]))).toEqual(
      new Map([
        [keys[0], ids[7]],
        [keys[1], ids[41]],
      ]),
    );
  });

  it('records each run its own call id and never replaces one a run already has', async () => {
    const [first, second] = await queuedRuns(2);
    await store.recordProviderCallId(first, 'SB-kept');
    await store.recordProviderCallIds([
      { runId: first, providerCallId: 'SB-late' },
      { runId: second, providerCallId: 'SB-second' },
    ]);
    const byId = new Map((await store.findManyById([first, second])).map((run) => [run.id, run.providerCallId]));
    expect(byId.get(first)).toBe('SB-kept');
    expect(byId.get(second)).toBe('SB-second');
  });

  it('completes only the runs whose call completed and are not complete yet, and answers which', async () => {
    const [completed, ringing] = await queuedRuns(2);
    for (const id of [completed, ringing]) await store.transition(id, 'dialing', 'dialer.dialing');
    await store.transition(completed, 'completed', 'carrier.completed', { endedAt: new Date() });

    const done = await store.completeArtifactsMany([
      { runId: completed, transcriptKey: `runs/${completed}/transcript.json`, recordingKey: null },
      { runId: ringing, transcriptKey: `runs/${ringing}/transcript.json`, recordingKey: null },
    ]);
    expect(done).toEqual([completed]);
    const again = await store.completeArtifactsMany([{ runId: completed, transcriptKey: 'other', recordingKey: null }]);
    expect(again).toEqual([]);
    const byId = new Map((await store.findManyById([completed, ringing])).map((run) => [run.id, run]));
    expect(byId.get(completed)).toMatchObject({ isCompleted: true, transcriptKey: `runs/${completed}/transcript.json` });
    expect(byId.get(ringing)).toMatchObject({ isCompleted: false, transcriptKey: null });
  });
});
