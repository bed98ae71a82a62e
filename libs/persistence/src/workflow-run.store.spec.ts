import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { testRunResources } from '../../../test/support/test-run-id';
import { storedRunIds } from '../../../test/support/stored-run-ids';
import { createDataSource } from './create-data-source';
import { TelephonyConfiguration } from './entities';
import { AGENT_DATA_LIMITS, NewRun, WorkflowRunStore } from './workflow-run.store';

/** Against this test run's Postgres: the duration and transition rules are conditional updates, which only the database can prove. */
describe('WorkflowRunStore durations and transitions', () => {
  let dataSource: DataSource;
  let store: WorkflowRunStore;

  beforeAll(async () => {
    dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 4 });
    await dataSource.initialize();
    store = new WorkflowRunStore(dataSource);
  });
  afterAll(() => dataSource?.destroy());

  const queuedRun = (): NewRun => ({
    organizationId: 1,
    workflowId: 1,
    environment: 'test',
    triggerUuid: randomUUID(),
    apiKeyId: 1,
    telephonyConfigurationId: 1,
    provider: 'telnyx',
    phoneNumber: '+14155550100',
    initialContext: {},
  });

  /** A run answered, then hung up `talkSeconds` later, as the carrier's events move it. */
  async function endedCall(talkSeconds: number): Promise<number> {
    const [runId] = storedRunIds(await store.insertQueued([queuedRun()]));
    const answeredAt = new Date(Date.now() - talkSeconds * 1000);
    await store.transition(runId, 'dialing', 'dialer.dialing');
    await store.transition(runId, 'in_progress', 'carrier.answered', { answeredAt });
    await store.transition(runId, 'completed', 'carrier.completed', { endedAt: new Date(answeredAt.getTime() + talkSeconds * 1000) });
    return runId;
  }

  async function durationOf(runId: number): Promise<{ duration: number | null; costInfo: Record<string, unknown> }> {
    const run = await store.findById(runId);
    return { duration: run!.durationSeconds, costInfo: run!.costInfo };
  }

  it('fills a duration computed from answer to hang-up when the carrier gave none', async () => {
    const runId = await endedCall(37);

    await store.fillDuration(runId);

    expect(await durationOf(runId)).toEqual({ duration: 37, costInfo: { call_duration_seconds: 37 } });
  });

  it("replaces the computed duration with the carrier's billed one that comes later", async () => {
    const runId = await endedCall(37);
    await store.fillDuration(runId);

    await store.fillDuration(runId, 60);
    await store.mergeCostInfo(runId, { total_cost: 0.0125, currency: 'USD' });

    expect(await durationOf(runId)).toEqual({
      duration: 60,
      costInfo: { call_duration_seconds: 60, total_cost: 0.0125, currency: 'USD' },
    });
  });

  it("never replaces the carrier's duration with a computed one that comes later", async () => {
    const runId = await endedCall(37);
    await store.fillDuration(runId, 60);

    await store.fillDuration(runId);

    expect(await durationOf(runId)).toEqual({ duration: 60, costInfo: { call_duration_seconds: 60 } });
  });

  it("keeps a carrier's zero: a billed duration is the carrier's word, even when it is 0", async () => {
    const runId = await endedCall(37);
    await store.fillDuration(runId, 0);

    await store.fillDuration(runId);

    expect(await durationOf(runId)).toEqual({ duration: 0, costInfo: { call_duration_seconds: 0 } });
  });

  it("ends with the carrier's duration when both are written at once", async () => {
    const runIds = await Promise.all(Array.from({ length: 8 }, () => endedCall(37)));

    await Promise.all(
      runIds.flatMap((runId, i) =>
        i % 2 ? [store.fillDuration(runId), store.fillDuration(runId, 60)] : [store.fillDuration(runId, 60), store.fillDuration(runId)],
      ),
    );

    for (const runId of runIds) expect(await durationOf(runId)).toEqual({ duration: 60, costInfo: { call_duration_seconds: 60 } });
  });

  it("moves the run's updated_at with an event that changes no status, as with every write its record shows", async () => {
    const [runId] = storedRunIds(await store.insertQueued([queuedRun()]));
    await dataSource.query(`UPDATE workflow_runs SET updated_at = now() - interval '1 hour' WHERE id = $1`, [runId]);
    const before = (await store.findById(runId))!.updatedAt;

    await store.appendEvent(runId, 'api.hangup_requested');

    const after = await store.findById(runId);
    expect((after!.logs as { events: Array<{ event: string }> }).events.map((entry) => entry.event)).toContain('api.hangup_requested');
    expect(after!.updatedAt.getTime() - before.getTime()).toBeGreaterThan(3_000_000);
  });

  it('leaves a run that was never answered alone', async () => {
    const [runId] = storedRunIds(await store.insertQueued([queuedRun()]));
    await store.transition(runId, 'failed', 'carrier.failed', { endedAt: new Date() });

    await store.fillDuration(runId, 60);
    await store.fillDuration(runId);

    expect(await durationOf(runId)).toEqual({ duration: null, costInfo: {} });
  });

  it('fills the duration of a run the reaper ended once answered, from the carrier\'s report of the hang-up', async () => {
    const [runId] = storedRunIds(await store.insertQueued([queuedRun()]));
    const answeredAt = new Date(Date.now() - 3_700_000);
    await store.transition(runId, 'dialing', 'dialer.dialing');
    await store.transition(runId, 'in_progress', 'carrier.answered', { answeredAt });
    await store.transition(runId, 'failed', 'reaper.failed', { endReason: 'max_duration_exceeded', endedAt: new Date() });

    await store.fillDuration(runId);
    expect((await durationOf(runId)).duration).toBeCloseTo(3700, 0);

    await store.fillDuration(runId, 3702);
    expect(await durationOf(runId)).toEqual({ duration: 3702, costInfo: { call_duration_seconds: 3702 } });
  });

  /** A run whose call is being placed: one an agent runtime may report on. */
  async function dialingRun(): Promise<number> {
    const [runId] = storedRunIds(await store.insertQueued([queuedRun()]));
    await store.transition(runId, 'dialing', 'dialer.dialing');
    return runId;
  }

  it('adds a turn the run has already once: a retried report whose answer was lost does not double the transcript', async () => {
    const runId = await dialingRun();
    const hello = { speaker: 'agent', text: 'Hello', start_ms: 0, end_ms: 900 };
    const reply = { speaker: 'user', text: 'Hi', start_ms: 1000, end_ms: 1400 };
    const again = { speaker: 'agent', text: 'Hello', start_ms: 2000, end_ms: 2900 };
    expect(await store.recordAgentReport(runId, { turns: [hello, reply] })).toMatchObject({ kind: 'stored' });
    expect(await store.recordAgentReport(runId, { turns: [hello, reply] })).toMatchObject({ kind: 'stored' });
    // One turn it has and one it has not, which may say the same words at another time.
    expect(await store.recordAgentReport(runId, { turns: [reply, again] })).toMatchObject({ kind: 'stored' });
    expect((await store.findById(runId))?.agentTranscript).toEqual([hello, reply, again]);

    // Sent again side by side (a runtime retrying while the first is still being stored): each waits for the one
    // before it, and the turns are added once.
    const late = [{ speaker: 'user', text: 'Bye', start_ms: 3000, end_ms: 3300 }, { speaker: 'agent', text: 'Bye', start_ms: 3400, end_ms: 3900 }];
    const answers = await Promise.all(Array.from({ length: 8 }, () => store.recordAgentReport(runId, { turns: late })));
    expect(answers.every((answer) => answer.kind === 'stored')).toBe(true);
    expect((await store.findById(runId))?.agentTranscript).toEqual([hello, reply, again, ...late]);
  });

  it("keeps an agent runtime's reports up to the run's limits, and says why it stored nothing", async () => {
    const runId = await dialingRun();
    const turns = (from: number, count: number) =>
      Array.from({ length: count }, (_, i) => ({ speaker: 'agent', text: 'Hello', start_ms: from + i, end_ms: from + i + 1 }));

    expect(await store.recordAgentReport(runId, { turns: turns(0, AGENT_DATA_LIMITS.turns - 2) })).toMatchObject({ kind: 'stored' });
    expect(await store.recordAgentReport(runId, { turns: turns(AGENT_DATA_LIMITS.turns - 2, 2) })).toEqual({
      kind: 'stored',
      call: { runId, organizationId: 1, provider: 'telnyx', providerCallId: null },
    });
    // At the limit, the retry of the report that reached it (its answer lost) adds nothing, so it is stored; a new
    // turn is refused, alone or beside turns the run has.
    expect(await store.recordAgentReport(runId, { turns: turns(AGENT_DATA_LIMITS.turns - 2, 2) })).toMatchObject({ kind: 'stored' });
    expect(await store.recordAgentReport(runId, { turns: turns(AGENT_DATA_LIMITS.turns, 1) })).toEqual({ kind: 'full' });
    expect(await store.recordAgentReport(runId, { turns: turns(AGENT_DATA_LIMITS.turns - 1, 2) })).toEqual({ kind: 'full' });
    const big = { notes: 'x'.repeat(AGENT_DATA_LIMITS.bytes) };
    expect(await store.recordAgentReport(runId, { gatheredContext: big })).toEqual({ kind: 'full' });
    expect((await store.findById(runId))?.agentTranscript).toHaveLength(AGENT_DATA_LIMITS.turns);
    // Gathered context is measured as the merge leaves it: sent whole again (its keys replaced) it still fits, while
    // as much again under new keys does not.
    const most = Math.floor(AGENT_DATA_LIMITS.bytes * 0.6);
    expect(await store.recordAgentReport(runId, { gatheredContext: { notes: 'a'.repeat(most) } })).toMatchObject({ kind: 'stored' });
    expect(await store.recordAgentReport(runId, { gatheredContext: { notes: 'b'.repeat(most) } })).toMatchObject({ kind: 'stored' });
    expect(await store.recordAgentReport(runId, { gatheredContext: { more: 'c'.repeat(most) } })).toEqual({ kind: 'full' });
    expect(((await store.findById(runId))?.gatheredContext.notes as string).startsWith('b')).toBe(true);
    // Usage names: up to the limit, then a new name is refused whole, while a name the run has is updated.
    const names = (from: number, count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`n${from + i}`, i]));
    expect(await store.recordAgentReport(runId, { usage: names(0, AGENT_DATA_LIMITS.usageNames) })).toMatchObject({ kind: 'stored' });
    expect(await store.recordAgentReport(runId, { usage: names(AGENT_DATA_LIMITS.usageNames, 1) })).toEqual({ kind: 'full' });
    expect(await store.recordAgentReport(runId, { usage: { n0: 99 } })).toMatchObject({ kind: 'stored' });
    const usage = (await store.findById(runId))?.costInfo.usage as Record<string, number>;
    expect(Object.keys(usage)).toHaveLength(AGENT_DATA_LIMITS.usageNames);
    expect(usage.n0).toBe(99);

    await store.transition(runId, 'failed', 'dialer.failed', { endedAt: new Date() });
    expect(await store.recordAgentReport(runId, { turns: turns(0, 1) })).toEqual({ kind: 'closed' });
    expect(await store.recordAgentReport(Number.MAX_SAFE_INTEGER, { turns: turns(0, 1) })).toEqual({ kind: 'no_run' });
  });

  it('stores no report after the one that ended the session, however close behind it came', async () => {
    const runId = await dialingRun();
    const turn = { speaker: 'agent', text: 'Goodbye', start_ms: 0, end_ms: 1 };
    expect(await store.recordAgentReport(runId, { turns: [turn], ended: true })).toMatchObject({ kind: 'stored' });
    // A report that passed the session's check before the ending one was stored: its turns would miss the transcript.
    expect(await store.recordAgentReport(runId, { turns: [{ ...turn, text: 'late' }], gatheredContext: { late: true } })).toEqual({
      kind: 'closed',
    });
    const run = await store.findById(runId);
    expect(run?.agentTranscript).toEqual([turn]);
    expect(run?.gatheredContext).toEqual({});
  });

  it("stores an agent runtime's report or recording only in a status a session is open in, and once complete in none", async () => {
    const turn = { speaker: 'user', text: 'Hi', start_ms: 0, end_ms: 1 };
    const [queued] = storedRunIds(await store.insertQueued([queuedRun()]));
    expect(await store.recordAgentReport(queued, { turns: [turn] })).toEqual({ kind: 'closed' });
    expect(await store.recordAgentRecording(queued, 'recordings/queued.wav')).toEqual({ kind: 'closed' });

    // Completed by the carrier, the run waits for its runtime's report; complete, it takes none.
    const completed = await endedCall(3);
    expect(await store.recordAgentReport(completed, { turns: [turn] })).toMatchObject({ kind: 'stored' });
    await dataSource.query(`UPDATE workflow_runs SET is_completed = true WHERE id = $1`, [completed]);
    expect(await store.recordAgentReport(completed, { turns: [turn] })).toEqual({ kind: 'closed' });
    expect(await store.recordAgentRecording(completed, 'recordings/complete.wav')).toEqual({ kind: 'closed' });

    const rows: Array<{ id: number; agent_transcript: unknown[]; recording_key: string | null }> = await dataSource.query(
      `SELECT id, agent_transcript, recording_key FROM workflow_runs WHERE id = ANY($1::bigint[]) ORDER BY id`,
      [[queued, completed]],
    );
    expect(rows).toEqual([
      { id: queued, agent_transcript: [], recording_key: null },
      { id: completed, agent_transcript: [turn], recording_key: null },
    ]);
  });

  it("keeps the agent runtime's one recording, and says why it kept none", async () => {
    const runId = await dialingRun();

    expect(await store.recordAgentRecording(runId, 'recordings/first.wav')).toEqual({ kind: 'stored' });
    expect(await store.recordAgentRecording(runId, 'recordings/second.wav')).toEqual({ kind: 'exists' });
    expect((await store.findById(runId))?.recordingKey).toBe('recordings/first.wav');

    const ended = await dialingRun();
    expect(await store.recordAgentReport(ended, { ended: true })).toMatchObject({ kind: 'stored' });
    expect(await store.recordAgentRecording(ended, 'recordings/late.wav')).toEqual({ kind: 'closed' });
    expect((await store.findById(ended))?.recordingKey).toBeNull();
    expect(await store.recordAgentRecording(Number.MAX_SAFE_INTEGER, 'recordings/none.wav')).toEqual({ kind: 'no_run' });
  });

  it('reads a run scoped to its workflow and organization, and nothing under another of either', async () => {
    const [runId] = storedRunIds(await store.insertQueued([queuedRun()]));
    expect((await store.findScoped(runId, 1, 1))?.id).toBe(runId);
    expect(await store.findScoped(runId, 1, 2)).toBeNull();
    expect(await store.findScoped(runId, 2, 1)).toBeNull();
  });

  it('reads a run with the definition it was dialed with', async () => {
    const graph = { nodes: [{ id: 'start', type: 'startCall', data: { prompt: 'Hello' } }], edges: [] };
    // No workflow of this test run has this id (ids count up from 1): the definition is this test's alone.
    const [{ id: definitionId }] = await dataSource.query(
      `INSERT INTO workflow_definitions (workflow_id, version, status, definition) VALUES (2000000000, 1, 'published', $1) RETURNING id`,
      [JSON.stringify(graph)],
    );
    const [withDefinition, without] = storedRunIds(await store.insertQueued([queuedRun(), queuedRun()]));
    await dataSource.query(`UPDATE workflow_runs SET definition_id = $2 WHERE id = $1`, [withDefinition, definitionId]);

    const found = await store.findWithDefinition(withDefinition);
    expect(found?.run.id).toBe(withDefinition);
    expect(found?.run.definitionId).toBe(definitionId);
    expect(found?.definition).toEqual(graph);
    expect(await store.findWithDefinition(without)).toMatchObject({ run: { id: without, definitionId: null }, definition: null });
    expect(await store.findWithDefinition(Number.MAX_SAFE_INTEGER)).toBeNull();
  });

  it('reads a run with its telephony configuration as the ORM maps it', async () => {
    const [{ id: configurationId }] = await dataSource.query(
      `INSERT INTO telephony_configurations
         (organization_id, name, provider, credentials_encrypted, from_numbers, calls_per_second, max_concurrent_calls, settings)
       VALUES (1, 'Store spec', 'telnyx', 'v1:sealed', ARRAY['+15005550006', '+15005550007'], 2.5, 7, '{"ring_ms": 20, "nested": {"a": [1]}}')
       RETURNING id`,
    );
    const [withConfiguration, without] = storedRunIds(await store.insertQueued([{ ...queuedRun(), telephonyConfigurationId: configurationId }, queuedRun()]));
    await dataSource.query(`UPDATE workflow_runs SET telephony_configuration_id = NULL WHERE id = $1`, [without]);

    const found = await store.findWithConfiguration(withConfiguration);
    expect(found?.run).toEqual(await store.findById(withConfiguration));
    // Field for field what the ORM reads (timestamps to the millisecond, as a JS Date keeps them).
    expect(found?.configuration).toEqual(await dataSource.getRepository(TelephonyConfiguration).findOneBy({ id: configurationId }));
    expect(found?.configuration?.callsPerSecond).toBe(2.5);
    expect(await store.findWithConfiguration(without)).toMatchObject({ run: { id: without }, configuration: null });
    expect(await store.findWithConfiguration(Number.MAX_SAFE_INTEGER)).toBeNull();
  });

  it("notes the agent's session only on a run that has not ended, and says whether it did", async () => {
    const [ringing, ended] = storedRunIds(await store.insertQueued([queuedRun(), queuedRun()]));
    for (const runId of [ringing, ended]) {
      await store.transition(runId, 'dialing', 'dialer.dialing');
      await store.transition(runId, 'ringing', 'carrier.ringing');
    }
    await store.transition(ended, 'failed', 'reaper.failed', { endReason: 'ring_timeout', endedAt: new Date() });

    expect(await store.markAgentSessionStarted(ringing)).toBe(true);
    expect(await store.markAgentSessionStarted(ended)).toBe(false);
    expect((await store.findById(ringing))?.agentSessionStartedAt).not.toBeNull();
    expect((await store.findById(ended))?.agentSessionStartedAt).toBeNull();
  });

  it('moves a run only from the statuses `from` names, and never from one its target does not allow', async () => {
    const statusOf = async (runId: number) => (await store.findById(runId))?.status;
    const [queued, dialing, ringing] = storedRunIds(await store.insertQueued([queuedRun(), queuedRun(), queuedRun()]));
    await store.transition(dialing, 'dialing', 'dialer.dialing');
    await store.transition(ringing, 'dialing', 'dialer.dialing');
    await store.transition(ringing, 'ringing', 'carrier.ringing');

    expect(await store.transition(dialing, 'failed', 'dialer.gave_up', {}, undefined, ['queued'])).toBeNull();
    expect(await statusOf(dialing)).toBe('dialing');
    expect(await store.transition(queued, 'failed', 'dialer.gave_up', {}, undefined, ['queued'])).not.toBeNull();
    expect(await statusOf(queued)).toBe('failed');
    // A ringing run may fail, but not through a move narrowed to other statuses.
    expect(await store.transition(ringing, 'failed', 'reaper.failed', {}, undefined, ['dialing'])).toBeNull();
    expect(await statusOf(ringing)).toBe('ringing');
    // `from` never widens: a ringing run cannot go back to dialing even when asked.
    expect(await store.transition(ringing, 'dialing', 'test.backwards', {}, undefined, ['ringing'])).toBeNull();
    expect(await statusOf(ringing)).toBe('ringing');
  });

  it('hands a dial back to the queue, or ends it, only if the run has not moved since it was read (and, to hand it back, has no call id)', async () => {
    const [runId, called] = storedRunIds(await store.insertQueued([queuedRun(), queuedRun()]));
    await store.transition(runId, 'dialing', 'dialer.dialing');
    const seen = (await store.findById(runId))!;
    // Another reaper handed it back meanwhile and a dialer claimed it again: a new dial the reader knows nothing of.
    // (Instants compare to the millisecond; in service a new claim comes seconds after the read.)
    await new Promise((resolve) => setTimeout(resolve, 5));
    await store.transition(runId, 'queued', 'reaper.requeued');
    await store.transition(runId, 'dialing', 'dialer.dialing');
    expect(await store.transition(runId, 'queued', 'reaper.requeued', {}, undefined, ['dialing'], { unmovedSince: seen.statusChangedAt, withoutCallId: true })).toBeNull();
    // Nor is the new dial ended as the stuck one it replaced.
    expect(await store.transition(runId, 'failed', 'reaper.failed', {}, undefined, ['dialing'], { unmovedSince: seen.statusChangedAt })).toBeNull();
    expect((await store.findById(runId))?.status).toBe('dialing');

    const current = (await store.findById(runId))!;
    expect(await store.transition(runId, 'queued', 'reaper.requeued', {}, undefined, ['dialing'], { unmovedSince: current.statusChangedAt, withoutCallId: true })).not.toBeNull();
    expect((await store.findById(runId))?.status).toBe('queued');

    await store.transition(called, 'dialing', 'dialer.dialing');
    await store.recordProviderCallId(called, 'CA-live');
    const withCall = (await store.findById(called))!;
    expect(await store.transition(called, 'queued', 'reaper.requeued', {}, undefined, ['dialing'], { unmovedSince: withCall.statusChangedAt, withoutCallId: true })).toBeNull();
    expect((await store.findById(called))?.status).toBe('dialing');
  });
});
