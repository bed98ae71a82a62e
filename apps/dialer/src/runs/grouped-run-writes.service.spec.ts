import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { createDataSource, WorkflowRunStore } from '@app/persistence';
import { storedRunIds } from '../../../../test/support/stored-run-ids';
import { testRunResources } from '../../../../test/support/test-run-id';
import { GroupedRunWrites } from './grouped-run-writes.service';

/** Against this test run's Postgres: grouped moves keep the conditional claim's one-winner rule. */
describe('GroupedRunWrites', () => {
  let dataSource: DataSource;
  let store: WorkflowRunStore;
  let writes: GroupedRunWrites;

  beforeAll(async () => {
    dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 4 });
    await dataSource.initialize();
    store = new WorkflowRunStore(dataSource);
    writes = new GroupedRunWrites(store);
  });
  afterAll(() => dataSource?.destroy());

  const queuedRuns = async (count: number, initialContext: Record<string, unknown> = {}) =>
    storedRunIds(
      await store.insertQueued(
      Array.from({ length: count }, () => ({
        organizationId: 1,
        workflowId: 1,
        environment: 'test' as const,
        triggerUuid: randomUUID(),
        apiKeyId: 1,
        telephonyConfigurationId: 3,
        provider: 'sandbox',
        phoneNumber: '+14155550100',
        initialContext,
      })),
      ),
    );

  it('lets exactly one of two simultaneous claims of one run win, even in one statement', async () => {
    const [runId] = await queuedRuns(1);
    const claims = await Promise.all([
      writes.transition(runId, 'dialing', 'dialer.dialing', { fromNumber: '+15005550006' }),
      writes.transition(runId, 'dialing', 'dialer.dialing', { fromNumber: '+15005550007' }),
    ]);
    expect(claims.filter((claim) => claim !== null)).toEqual([{ telephonyConfigurationId: 3 }]);
    const [run] = await store.findManyById([runId]);
    expect(run).toMatchObject({ status: 'dialing', fromNumber: '+15005550006' });
    expect((run.logs.events ?? []).filter((entry) => entry.event === 'dialer.dialing')).toHaveLength(1);
  });

  it('moves each run of a group with its own values and leaves a run that may not move', async () => {
    const [first, second, done] = await queuedRuns(3);
    await writes.transition(done, 'canceled', 'api.canceled', {});
    const outcomes = await Promise.all(
      [first, second, done].map((runId) =>
        writes.transition(runId, 'dialing', 'dialer.dialing', { fromNumber: `+1500555${runId}` }, { run: runId }),
      ),
    );
    expect(outcomes.map((outcome) => outcome !== null)).toEqual([true, true, false]);
    const byId = new Map((await store.findManyById([first, second, done])).map((run) => [run.id, run]));
    expect(byId.get(first)).toMatchObject({ status: 'dialing', fromNumber: `+1500555${first}` });
    expect(byId.get(second)).toMatchObject({ status: 'dialing', fromNumber: `+1500555${second}` });
    expect(byId.get(second)?.logs.events?.at(-1)).toMatchObject({ event: 'dialer.dialing', status: 'dialing', detail: { run: second } });
    expect(byId.get(done)?.status).toBe('canceled');
  });

  it('merges cost details and keeps the first call id a run learned', async () => {
    const [runId] = await queuedRuns(1);
    await writes.transition(runId, 'dialing', 'dialer.dialing', { providerCallId: 'SB-first' });
    const endedAt = new Date();
    await writes.transition(runId, 'completed', 'carrier.completed', {
      providerCallId: 'SB-other',
      endedAt,
      costInfo: { call_duration_seconds: 3 },
    });
    const [run] = await store.findManyById([runId]);
    expect(run).toMatchObject({ status: 'completed', providerCallId: 'SB-first', isCompleted: false, endedAt });
    expect(run.costInfo).toMatchObject({ call_duration_seconds: 3 });
  });

  it('answers a claimed run as the claim left it, and null to the second claim of the same run', async () => {
    const [runId] = await queuedRuns(1, { name: 'Ada', order: { id: 7 } });
    const [won, lost] = await Promise.all([
      writes.claim(runId, 'dialer.dialing', { definitionId: 11, fromNumber: '+15005550006' }),
      writes.claim(runId, 'dialer.dialing', { definitionId: 11, fromNumber: '+15005550007' }),
    ]);
    expect(lost).toBeNull();
    expect(won).toMatchObject({
      id: runId,
      organizationId: 1,
      status: 'dialing',
      definitionId: 11,
      fromNumber: '+15005550006',
      phoneNumber: '+14155550100',
      telephonyConfigurationId: 3,
      initialContext: { name: 'Ada', order: { id: 7 } },
    });
    // Only what a dial reads comes back; the row holds the rest of the move.
    expect(Object.keys(won ?? {}).sort()).toEqual(
      ['definitionId', 'fromNumber', 'id', 'initialContext', 'organizationId', 'phoneNumber', 'provider', 'status', 'telephonyConfigurationId', 'workflowId'],
    );
    const [stored] = await store.findManyById([runId]);
    expect(stored.logs.events?.map((entry) => entry.event)).toEqual(['run.queued', 'dialer.dialing']);
    expect(await writes.claim(runId, 'dialer.dialing', { fromNumber: '+15005550006' })).toBeNull();
  });

  it('claims only queued runs, each answered with its own row', async () => {
    const [first, canceled, second] = await queuedRuns(3);
    await writes.transition(canceled, 'canceled', 'api.canceled', {});
    const claimed = await Promise.all([first, canceled, second].map((runId) => writes.claim(runId, 'dialer.dialing', { fromNumber: `+1500555${runId}` })));
    expect(claimed.map((run) => run?.id ?? null)).toEqual([first, null, second]);
    expect(claimed.map((run) => run?.fromNumber ?? null)).toEqual([`+1500555${first}`, null, `+1500555${second}`]);
    const [stored] = await store.findManyById([canceled]);
    expect(stored.status).toBe('canceled');
  });

  it('fails only the move Postgres cannot store, and applies the others that shared its statement', async () => {
    const [first, bad, last] = await queuedRuns(3);
    await Promise.all([first, bad, last].map((runId) => writes.claim(runId, 'dialer.dialing', { fromNumber: '+15005550006' })));
    // A carrier's text with a NUL in it: jsonb cannot hold one.
    const outcomes = await Promise.allSettled(
      [first, bad, last].map((runId) =>
        writes.transition(runId, 'ringing', 'carrier.ringing', {}, { reason: runId === bad ? 'bad\u0000text' : 'fine' }),
      ),
    );
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ code: '22P05' });
    const byId = new Map((await store.findManyById([first, bad, last])).map((run) => [run.id, run.status]));
    expect([byId.get(first), byId.get(bad), byId.get(last)]).toEqual(['ringing', 'dialing', 'ringing']);
  });
});
