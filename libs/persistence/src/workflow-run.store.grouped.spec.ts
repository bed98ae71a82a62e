import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { backendPid, waitersOn } from '../../../test/support/lock-waiters';
import { storedRunIds } from '../../../test/support/stored-run-ids';
import { testRunResources } from '../../../test/support/test-run-id';
import { createDataSource } from './create-data-source';
import { NewRun, WorkflowRunStore } from './workflow-run.store';

/** Against this test run's Postgres: the grouped writes stay conditional per run. */
describe('WorkflowRunStore grouped writes', () => {
  let dataSource: DataSource;
  let store: WorkflowRunStore;
  const ORG = 900_001;
  const BODY = 'a'.repeat(64);
  const OTHER_BODY = 'b'.repeat(64);
  const runCount = async (): Promise<number> =>
    Number((await dataSource.query('SELECT count(*) AS n FROM workflow_runs WHERE organization_id IN ($1, $2)', [ORG, ORG + 1]))[0].n);

  beforeAll(async () => {
    dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 4 });
    await dataSource.initialize();
    store = new WorkflowRunStore(dataSource);
  });
  afterAll(() => dataSource?.destroy());

  const newRun = (index: number, overrides: Partial<NewRun> = {}): NewRun => ({
    organizationId: ORG,
    workflowId: 1,
    environment: index % 2 ? 'test' : 'production',
    triggerUuid: randomUUID(),
    apiKeyId: 1,
    telephonyConfigurationId: 1,
    provider: 'sandbox',
    phoneNumber: `+1415555${String(index).padStart(4, '0')}`,
    initialContext: { index, quote: 'say "hi", \\ then {stop}', nested: { list: [index, null, 'ü'] } },
    ...overrides,
  });
  /** Runs without keys, which are always stored. */
  const queuedRuns = async (count: number): Promise<number[]> =>
    storedRunIds(await store.insertQueued(Array.from({ length: count }, (_, index) => newRun(index))));
  const keyRows = async (keys: string[]): Promise<Map<string, { request_hash: string; run_id: number | null }>> => {
    const rows: Array<{ key: string; request_hash: string; run_id: number | null }> = await dataSource.query(
      'SELECT key, request_hash, run_id FROM idempotency_keys WHERE organization_id = $1 AND key = ANY($2::text[])',
      [ORG, keys],
    );
    return new Map(rows.map(({ key, ...row }) => [key, row]));
  };

  it('stores a batch of runs each with its own values, answers their ids in the order given and claims each idempotency key for its run', async () => {
    const keys = [`k-${randomUUID()}`, `k-${randomUUID()}`];
    const runs = Array.from({ length: 60 }, (_, index) =>
      newRun(index, { idempotency: index === 7 ? { key: keys[0], requestHash: BODY } : index === 41 ? { key: keys[1], requestHash: OTHER_BODY } : null }),
    );

    const ids = await store.insertQueued(runs);

    expect(ids).toHaveLength(60);
    expect(ids.every((id) => typeof id === 'number')).toBe(true);
    expect(new Set(ids).size).toBe(60);
    const stored = new Map((await store.findManyById(ids as number[])).map((run) => [run.id, run]));
    ids.forEach((id, index) => {
      expect(stored.get(id!)).toMatchObject({
        name: `WR-API-${id}`,
        status: 'queued',
        environment: runs[index].environment,
        telephonyConfigurationId: runs[index].telephonyConfigurationId,
        phoneNumber: runs[index].phoneNumber,
        initialContext: runs[index].initialContext,
      });
    });
    expect(await keyRows(keys)).toEqual(
      new Map([
        [keys[0], { request_hash: BODY, run_id: ids[7] }],
        [keys[1], { request_hash: OTHER_BODY, run_id: ids[41] }],
      ]),
    );
  });

  it('claims keys and stores runs in one statement', async () => {
    const pool = (dataSource.driver as unknown as { master: { query: (...args: unknown[]) => unknown } }).master;
    const query = jest.spyOn(pool, 'query');
    try {
      await store.insertQueued(Array.from({ length: 30 }, (_, index) => newRun(index, { idempotency: { key: `k-${randomUUID()}`, requestHash: BODY } })));
      expect(query).toHaveBeenCalledTimes(1);
    } finally {
      query.mockRestore();
    }
  });

  it('stores nothing for a run whose key is held: by a finished request, or with another body by a dead one', async () => {
    const [finished, deadOther, fresh] = [`k-${randomUUID()}`, `k-${randomUUID()}`, `k-${randomUUID()}`];
    await dataSource.query(
      `INSERT INTO idempotency_keys (organization_id, key, request_hash, run_id, locked_until, expires_at) VALUES
         ($1, $2, $4, 4242, now(), now() + interval '1 day'),
         ($1, $3, $5, NULL, now() - interval '1 second', now() + interval '1 day')`,
      [ORG, finished, deadOther, BODY, OTHER_BODY],
    );
    const before = await runCount();

    const ids = await store.insertQueued([
      newRun(1, { idempotency: { key: finished, requestHash: BODY } }),
      newRun(2, { idempotency: { key: deadOther, requestHash: BODY } }),
      newRun(3, { idempotency: { key: fresh, requestHash: BODY } }),
      newRun(4),
    ]);

    expect(ids.slice(0, 2)).toEqual([null, null]);
    expect(typeof ids[2]).toBe('number');
    expect(typeof ids[3]).toBe('number');
    expect(await runCount()).toBe(before + 2);
    const rows = await keyRows([finished, deadOther, fresh]);
    expect(rows.get(finished)).toEqual({ request_hash: BODY, run_id: 4242 });
    expect(rows.get(deadOther)).toEqual({ request_hash: OTHER_BODY, run_id: null });
    expect(rows.get(fresh)).toEqual({ request_hash: BODY, run_id: ids[2] });
  });

  it('takes over an expired key and one whose first request died holding it with the same body', async () => {
    const [expired, dead] = [`k-${randomUUID()}`, `k-${randomUUID()}`];
    await dataSource.query(
      `INSERT INTO idempotency_keys (organization_id, key, request_hash, run_id, locked_until, expires_at) VALUES
         ($1, $2, $4, 4343, now() - interval '2 days', now() - interval '1 day'),
         ($1, $3, $5, NULL, now() - interval '1 second', now() + interval '1 day')`,
      [ORG, expired, dead, OTHER_BODY, BODY],
    );

    const ids = await store.insertQueued([
      newRun(1, { idempotency: { key: expired, requestHash: BODY } }),
      newRun(2, { idempotency: { key: dead, requestHash: BODY } }),
    ]);

    expect(ids.every((id) => typeof id === 'number')).toBe(true);
    expect(await keyRows([expired, dead])).toEqual(
      new Map([
        [expired, { request_hash: BODY, run_id: ids[0] }],
        [dead, { request_hash: BODY, run_id: ids[1] }],
      ]),
    );
  });

  it('does not store a key in flight that has not died yet', async () => {
    const inFlight = `k-${randomUUID()}`;
    await dataSource.query(
      `INSERT INTO idempotency_keys (organization_id, key, request_hash, run_id, locked_until, expires_at)
       VALUES ($1, $2, $3, NULL, now() + interval '30 seconds', now() + interval '1 day')`,
      [ORG, inFlight, BODY],
    );
    expect(await store.insertQueued([newRun(1, { idempotency: { key: inFlight, requestHash: BODY } })])).toEqual([null]);
  });

  it('stores a key that comes twice in one group once, for its first run, and keeps one key of two organizations apart', async () => {
    const key = `k-${randomUUID()}`;
    const before = await runCount();

    const ids = await store.insertQueued([
      newRun(1, { idempotency: { key, requestHash: BODY } }),
      newRun(2, { idempotency: { key, requestHash: OTHER_BODY } }),
      newRun(3, { organizationId: ORG + 1, idempotency: { key, requestHash: OTHER_BODY } }),
      newRun(4, { idempotency: { key, requestHash: BODY } }),
    ]);

    expect(ids[1]).toBeNull();
    expect(ids[3]).toBeNull();
    expect(await runCount()).toBe(before + 2);
    expect(await keyRows([key])).toEqual(new Map([[key, { request_hash: BODY, run_id: ids[0] }]]));
    const [other] = await dataSource.query('SELECT run_id FROM idempotency_keys WHERE organization_id = $1 AND key = $2', [ORG + 1, key]);
    expect(other.run_id).toBe(ids[2]);
  });

  it('lets exactly one of two groups racing with the same keys in opposite orders store each run, without a deadlock', async () => {
    // Sorted as listed. A third request holds the middle key while both groups start, so each has taken the keys
    // before it when the middle one is freed: taken in the order given, they would then wait on each other.
    const prefix = `k-${randomUUID()}`;
    const keys = Array.from({ length: 20 }, (_, index) => `${prefix}-${String(index).padStart(2, '0')}`);
    const group = (order: string[]) => order.map((key, index) => newRun(index, { idempotency: { key, requestHash: BODY } }));
    const holder = dataSource.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    let forward: Array<number | null>;
    let backward: Array<number | null>;
    try {
      await holder.query(
        `INSERT INTO idempotency_keys (organization_id, key, request_hash, run_id, locked_until, expires_at)
         VALUES ($1, $2, $3, NULL, now(), now() - interval '1 second')`,
        [ORG, keys[10], BODY],
      );
      const racing = Promise.all([store.insertQueued(group(keys)), store.insertQueued(group([...keys].reverse()))]);
      await waitersOn(dataSource, await backendPid(holder), 2, 'both groups to wait on the held key');
      await holder.rollbackTransaction();
      [forward, backward] = await racing;
    } finally {
      await holder.release();
    }

    const stored = await keyRows(keys);
    keys.forEach((key, index) => {
      const mine = forward[index];
      const theirs = backward[keys.length - 1 - index];
      // One of the two stored the key's run, and the key points at it.
      expect([mine, theirs].filter((id) => id !== null)).toHaveLength(1);
      expect(stored.get(key)!.run_id).toBe(mine ?? theirs);
    });
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
      { runId: completed, transcriptKey: `runs/${completed}/transcript.json`, recordingKey: null, agentTurns: 0, uploadWaitMs: 60_000 },
      { runId: ringing, transcriptKey: `runs/${ringing}/transcript.json`, recordingKey: null, agentTurns: 0, uploadWaitMs: 60_000 },
    ]);
    expect(done).toEqual([completed]);
    const again = await store.completeArtifactsMany([{ runId: completed, transcriptKey: 'other', recordingKey: null, agentTurns: 0, uploadWaitMs: 60_000 }]);
    expect(again).toEqual([]);
    const byId = new Map((await store.findManyById([completed, ringing])).map((run) => [run.id, run]));
    expect(byId.get(completed)).toMatchObject({ isCompleted: true, transcriptKey: `runs/${completed}/transcript.json` });
    expect(byId.get(ringing)).toMatchObject({ isCompleted: false, transcriptKey: null });
  });

  it('moves a run past the statuses in between when it is in one the first of them may be reached from, logging each in order', async () => {
    const [dialing, ringing] = await queuedRuns(2);
    for (const id of [dialing, ringing]) await store.transition(id, 'dialing', 'dialer.dialing');
    await store.transition(ringing, 'ringing', 'carrier.ringing');
    const through = [
      { status: 'ringing' as const, event: 'carrier.ringing', detail: { step: 1 } },
      { status: 'in_progress' as const, event: 'carrier.answered' },
    ];
    const answeredAt = new Date(Date.now() - 1_000);
    const outcomes = await store.transitionMany(
      'completed',
      'carrier.completed',
      [dialing, ringing].map((runId) => ({ runId, fields: { answeredAt, endedAt: new Date() }, detail: { step: 3 }, through })),
      ['dialing'],
    );
    // The run that had already rung is not in a status ringing may be reached from: it does not move.
    expect(outcomes).toEqual([{ telephonyConfigurationId: 1 }, null]);
    const byId = new Map((await store.findManyById([dialing, ringing])).map((run) => [run.id, run]));
    expect(byId.get(dialing)).toMatchObject({ status: 'completed', answeredAt, isCompleted: false });
    expect((byId.get(dialing)!.logs.events ?? []).map(({ event, status, detail }) => ({ event, status, detail }))).toEqual([
      { event: 'run.queued', status: 'queued', detail: undefined },
      { event: 'dialer.dialing', status: 'dialing', detail: undefined },
      { event: 'carrier.ringing', status: 'ringing', detail: { step: 1 } },
      { event: 'carrier.answered', status: 'in_progress', detail: undefined },
      { event: 'carrier.completed', status: 'completed', detail: { step: 3 } },
    ]);
    expect(byId.get(ringing)).toMatchObject({ status: 'ringing', answeredAt: null });
  });

  describe('resumeClaim', () => {
    const claim = (runId: number, claimId: string) =>
      store.transitionManyReturningRuns('dialing', 'dialer.dialing', [
        { runId, fields: { fromNumber: '+15005550006', maxCallDurationSeconds: 3600 }, detail: { claim: claimId } },
      ]);

    const statusChangedAt = async (runId: number) => (await store.findManyById([runId]))[0].statusChangedAt!.getTime();

    it('answers the run a claim of this id left dialing without a call, and notes the resume, a claim of its own, in the log', async () => {
      const [runId] = await queuedRuns(1);
      const [claimed] = await claim(runId, 'claim-a');
      const claimedAt = await statusChangedAt(runId);
      await new Promise((resolve) => setTimeout(resolve, 5));

      const resumed = await store.resumeClaim(runId, ['claim-a'], 'claim-a2', 'dialer.claim_resumed', { fromNumber: '+15005550006', maxCallDurationSeconds: 600 });

      expect(resumed).toEqual(claimed);
      const [run] = await store.findManyById([runId]);
      expect(run.status).toBe('dialing');
      expect((run.logs.events ?? []).map(({ event, detail }) => ({ event, detail }))).toEqual([
        { event: 'run.queued', detail: undefined },
        { event: 'dialer.dialing', detail: { claim: 'claim-a' } },
        { event: 'dialer.claim_resumed', detail: { claim: 'claim-a2' } },
      ]);
      // The dial's age starts again: the reaper's look-up of a stuck dial waits for this one.
      expect(run.statusChangedAt!.getTime()).toBeGreaterThan(claimedAt);
    });

    it("takes a claim up once: the id a resume replaced no longer resumes it, the resume's own id does", async () => {
      const [runId] = await queuedRuns(1);
      await claim(runId, 'claim-a');

      expect(await store.resumeClaim(runId, ['claim-a'], 'claim-a2', 'dialer.claim_resumed', { fromNumber: '+15005550006', maxCallDurationSeconds: 600 })).toMatchObject({ id: runId });
      expect(await store.resumeClaim(runId, ['claim-a'], 'claim-a3', 'dialer.claim_resumed', { fromNumber: '+15005550006', maxCallDurationSeconds: 600 })).toBeNull();
      expect(await store.resumeClaim(runId, ['claim-a', 'claim-a2'], 'claim-a4', 'dialer.claim_resumed', { fromNumber: '+15005550006', maxCallDurationSeconds: 600 })).toMatchObject({ id: runId });
      expect(await store.resumeClaim(runId, ['claim-a2'], 'claim-a5', 'dialer.claim_resumed', { fromNumber: '+15005550006', maxCallDurationSeconds: 600 })).toBeNull();
    });

    it('records the from number and time limit the taken-up dial goes out with, and keeps the definition when none is given', async () => {
      const [runId] = await queuedRuns(1);
      const [claimed] = await claim(runId, 'claim-a');

      expect((await store.findManyById([runId]))[0].maxCallDurationSeconds).toBe(3600);
      const resumed = await store.resumeClaim(runId, ['claim-a'], 'claim-a2', 'dialer.claim_resumed', { fromNumber: '+15005550007', maxCallDurationSeconds: 600 });

      expect(resumed).toEqual({ ...claimed, fromNumber: '+15005550007' });
      const [run] = await store.findManyById([runId]);
      expect({ fromNumber: run.fromNumber, definitionId: run.definitionId, maxCallDurationSeconds: run.maxCallDurationSeconds }).toEqual({
        fromNumber: '+15005550007',
        definitionId: claimed!.definitionId,
        maxCallDurationSeconds: 600,
      });
    });

    it('answers null for a run still queued, one with a call, one claimed by another, and one claimed again since', async () => {
      const [queued, withCall, other, again] = await queuedRuns(4);
      await claim(withCall, 'claim-b');
      await store.recordProviderCallId(withCall, 'SB-placed');
      await claim(other, 'claim-c');
      await claim(again, 'claim-d');
      await store.transition(again, 'queued', 'reaper.requeued');
      await claim(again, 'claim-e');

      expect(await store.resumeClaim(queued, ['claim-a'], 'claim-a2', 'dialer.claim_resumed', { fromNumber: '+15005550006', maxCallDurationSeconds: 600 })).toBeNull();
      expect(await store.resumeClaim(withCall, ['claim-b'], 'claim-b2', 'dialer.claim_resumed', { fromNumber: '+15005550006', maxCallDurationSeconds: 600 })).toBeNull();
      expect(await store.resumeClaim(other, ['claim-x'], 'claim-x2', 'dialer.claim_resumed', { fromNumber: '+15005550006', maxCallDurationSeconds: 600 })).toBeNull();
      expect(await store.resumeClaim(again, ['claim-d'], 'claim-d2', 'dialer.claim_resumed', { fromNumber: '+15005550006', maxCallDurationSeconds: 600 })).toBeNull();
      expect(await store.resumeClaim(again, ['claim-e'], 'claim-e2', 'dialer.claim_resumed', { fromNumber: '+15005550006', maxCallDurationSeconds: 600 })).toMatchObject({ id: again, status: 'dialing' });
    });
  });

  it('leaves a run incomplete when its agent turns are no longer those its transcript was made from, alone or grouped', async () => {
    const [alone, grouped] = await queuedRuns(2);
    for (const id of [alone, grouped]) {
      await store.transition(id, 'dialing', 'dialer.dialing');
      await store.transition(id, 'completed', 'carrier.completed', { endedAt: new Date() }, undefined, ['dialing']);
      // A runtime that never read its session reports after the collector read the run (no turns then).
      expect(await store.recordAgentReport(id, { turns: [{ speaker: 'user', text: 'Still there?' }] })).toMatchObject({ kind: 'stored' });
    }

    expect(await store.completeArtifacts(alone, { transcriptKey: 't', recordingKey: null, agentTurns: 0, uploadWaitMs: 60_000 })).toBe(false);
    expect(await store.completeArtifactsMany([{ runId: grouped, transcriptKey: 't', recordingKey: null, agentTurns: 0, uploadWaitMs: 60_000 }])).toEqual([]);
    const before = await store.findManyById([alone, grouped]);
    expect(before.map((run) => [run.id, run.isCompleted]).sort()).toEqual([[alone, false], [grouped, false]].sort());

    expect(await store.completeArtifacts(alone, { transcriptKey: 't2', recordingKey: null, agentTurns: 1, uploadWaitMs: 60_000 })).toBe(true);
    expect(await store.completeArtifactsMany([{ runId: grouped, transcriptKey: 't2', recordingKey: null, agentTurns: 1, uploadWaitMs: 60_000 }])).toEqual([grouped]);
    const byId = new Map((await store.findManyById([alone, grouped])).map((run) => [run.id, run]));
    for (const id of [alone, grouped]) expect(byId.get(id)).toMatchObject({ isCompleted: true, transcriptKey: 't2' });
  });

  it('keeps a recording the run already has when its artifacts are completed, alone or grouped', async () => {
    const [alone, grouped] = await queuedRuns(2);
    for (const id of [alone, grouped]) {
      await store.transition(id, 'dialing', 'dialer.dialing');
      await store.transition(id, 'completed', 'carrier.completed', { endedAt: new Date() }, undefined, ['dialing']);
      expect(await store.recordRecordingIfNone(id, `runs/${id}-agent.wav`)).toBe(true);
      expect(await store.recordRecordingIfNone(id, `runs/${id}-second.wav`)).toBe(false);
    }

    expect(await store.completeArtifacts(alone, { transcriptKey: 't', recordingKey: 'runs/carrier.wav', agentTurns: 0, uploadWaitMs: 60_000 })).toBe(true);
    expect(await store.completeArtifactsMany([{ runId: grouped, transcriptKey: 't', recordingKey: 'runs/carrier.wav', agentTurns: 0, uploadWaitMs: 60_000 }])).toEqual([grouped]);

    const byId = new Map((await store.findManyById([alone, grouped])).map((run) => [run.id, run]));
    expect(byId.get(alone)).toMatchObject({ isCompleted: true, recordingKey: `runs/${alone}-agent.wav`, transcriptKey: 't' });
    expect(byId.get(grouped)).toMatchObject({ isCompleted: true, recordingKey: `runs/${grouped}-agent.wav`, transcriptKey: 't' });
  });
});
