import { DataSource } from 'typeorm';
import { storeQueuedRuns } from '../../../test/support/queued-runs';
import { testRunResources } from '../../../test/support/test-run-id';
import { createDataSource } from './create-data-source';
import { WorkflowRunStore } from './workflow-run.store';

/** Against this test run's Postgres: an admitted upload against the dialer closing its session is decided on the row. */
describe("WorkflowRunStore and the agent runtime's recording upload", () => {
  let dataSource: DataSource;
  let store: WorkflowRunStore;
  const ORG = 900_301;
  const WAIT_MS = 60_000;

  beforeAll(async () => {
    dataSource = createDataSource({ url: testRunResources().databaseUrl, poolSize: 2 });
    await dataSource.initialize();
    store = new WorkflowRunStore(dataSource);
  });
  afterAll(() => dataSource?.destroy());

  /** A run whose call was answered and has just ended: its agent session is open until the runtime or the dialer closes it. */
  const endedCall = async (): Promise<number> => {
    const [runId] = await storeQueuedRuns(store, 1, { organizationId: ORG });
    await store.transition(runId, 'dialing', 'dialer.dialing');
    await store.transition(runId, 'in_progress', 'carrier.answered', { answeredAt: new Date() });
    await store.transition(runId, 'completed', 'carrier.completed', { endedAt: new Date() });
    return runId;
  };

  it('leaves the session open while an upload admitted within the wait may still be arriving, and closes it after', async () => {
    const runId = await endedCall();
    expect(await store.admitAgentRecording(runId, WAIT_MS)).toEqual({ kind: 'stored', admittedAt: expect.any(Date) });
    expect((await store.findById(runId))?.agentSessionStartedAt).not.toBeNull();

    expect(await store.closeAgentSession(runId, WAIT_MS)).toBeNull();
    expect((await store.findById(runId))?.agentSessionEndedAt).toBeNull();
    // Past the wait (the upload's request has timed out), or once the recording is in, the session closes.
    await dataSource.query(`UPDATE workflow_runs SET recording_upload_admitted_at = now() - interval '2 minutes' WHERE id = $1`, [runId]);
    expect(await store.closeAgentSession(runId, WAIT_MS)).toEqual([]);
  });

  it("keeps a carrier recording fetched as the runtime's upload began from taking its place, while the upload may be arriving", async () => {
    const runId = await endedCall();
    await store.admitAgentRecording(runId, WAIT_MS);

    expect(await store.recordRecordingIfNone(runId, 'runs/carrier.wav', WAIT_MS)).toBe(false);
    expect(await store.recordAgentRecording(runId, 'runs/agent.wav')).toEqual({ kind: 'stored' });
    expect((await store.findById(runId))?.recordingKey).toBe('runs/agent.wav');
  });

  it('stores an upload the dialer closed the session under, on a run finished meanwhile, and notes it came late', async () => {
    const runId = await endedCall();
    await store.admitAgentRecording(runId, WAIT_MS);
    await dataSource.query(`UPDATE workflow_runs SET recording_upload_admitted_at = now() - interval '2 minutes' WHERE id = $1`, [runId]);
    expect(await store.closeAgentSession(runId, WAIT_MS)).toEqual([]);
    expect(await store.completeArtifacts(runId, { transcriptKey: 'runs/transcript.json', recordingKey: null, agentTurns: 0, uploadWaitMs: WAIT_MS })).toBe(true);
    // The session is closed: a new upload is refused on its head.
    expect(await store.admitAgentRecording(runId, WAIT_MS)).toEqual({ kind: 'closed' });

    expect(await store.recordAgentRecording(runId, 'runs/agent.wav')).toEqual({ kind: 'stored' });
    const run = await store.findById(runId);
    expect(run?.recordingKey).toBe('runs/agent.wav');
    expect(run?.logs.events?.at(-1)).toMatchObject({ event: 'artifacts.late_recording_stored', detail: { source: 'agent_runtime' } });
    // A run keeps one recording.
    expect(await store.recordAgentRecording(runId, 'runs/again.wav')).toEqual({ kind: 'exists' });
  });

  it('admits no new upload once the call ended longer ago than the wait: a runtime whose uploads keep failing cannot hold the run open', async () => {
    const runId = await endedCall();
    const first = await store.admitAgentRecording(runId, WAIT_MS);
    expect(first.kind).toBe('stored');
    // That upload failed, its admission given back; the call ended longer ago than an upload begun then could take.
    await store.forgetAgentRecordingAdmission(runId, (first as { admittedAt: Date }).admittedAt);
    await dataSource.query(`UPDATE workflow_runs SET ended_at = now() - interval '61 seconds' WHERE id = $1`, [runId]);

    expect(await store.admitAgentRecording(runId, WAIT_MS)).toEqual({ kind: 'closed' });
    // Nothing arriving: the dialer closes the session and finishes the run.
    expect(await store.closeAgentSession(runId, WAIT_MS)).toEqual([]);
  });

  it('still admits the retry of an upload whose admission lapsed (its gateway stopped under it), past the cut-off', async () => {
    const runId = await endedCall();
    expect((await store.admitAgentRecording(runId, WAIT_MS)).kind).toBe('stored');
    // Never given back: its gateway stopped. The admission lapses after the wait, by which time the cut-off has passed.
    await dataSource.query(
      `UPDATE workflow_runs SET recording_upload_admitted_at = now() - interval '61 seconds', ended_at = now() - interval '62 seconds' WHERE id = $1`,
      [runId],
    );
    expect(await store.admitAgentRecording(runId, WAIT_MS)).toEqual({ kind: 'stored', admittedAt: expect.any(Date) });
  });

  it('refuses an upload whose session the runtime ended itself while it arrived, as every later request is', async () => {
    const runId = await endedCall();
    await store.admitAgentRecording(runId, WAIT_MS);
    expect(await store.recordAgentReport(runId, { ended: true })).toMatchObject({ kind: 'stored' });

    expect(await store.recordAgentRecording(runId, 'runs/after-end.wav')).toEqual({ kind: 'closed' });
    expect((await store.findById(runId))?.recordingKey).toBeNull();
  });

  it('refuses an upload of a run that ended other than completed while it arrived', async () => {
    const [runId] = await storeQueuedRuns(store, 1, { organizationId: ORG });
    await store.transition(runId, 'dialing', 'dialer.dialing');
    await store.transition(runId, 'in_progress', 'carrier.answered', { answeredAt: new Date() });
    await store.admitAgentRecording(runId, WAIT_MS);
    await store.transition(runId, 'failed', 'reaper.failed', { endReason: 'max_duration_exceeded' });

    expect(await store.recordAgentRecording(runId, 'runs/failed.wav')).toEqual({ kind: 'closed' });
  });

  it('admits one upload of a run at a time, on any gateway, until it is stored, forgotten, or past the wait', async () => {
    const runId = await endedCall();
    const first = await store.admitAgentRecording(runId, WAIT_MS);
    expect(first).toEqual({ kind: 'stored', admittedAt: expect.any(Date) });
    // A second, from a gateway that does not know of the first: refused, and the first's admission stays as it was.
    expect(await store.admitAgentRecording(runId, WAIT_MS)).toEqual({ kind: 'arriving' });
    const noted = async () => (await dataSource.query(`SELECT recording_upload_admitted_at AS at FROM workflow_runs WHERE id = $1`, [runId]))[0].at;
    expect(await noted()).toEqual((first as { admittedAt: Date }).admittedAt);

    // The first stores nothing: forgotten, another may come.
    await store.forgetAgentRecordingAdmission(runId, (first as { admittedAt: Date }).admittedAt);
    const second = await store.admitAgentRecording(runId, WAIT_MS);
    expect(second).toEqual({ kind: 'stored', admittedAt: expect.any(Date) });
    // One whose gateway died (never forgotten) holds the run only for the wait.
    await dataSource.query(`UPDATE workflow_runs SET recording_upload_admitted_at = now() - interval '2 minutes' WHERE id = $1`, [runId]);
    expect(await store.admitAgentRecording(runId, WAIT_MS)).toEqual({ kind: 'stored', admittedAt: expect.any(Date) });
    expect(await store.recordAgentRecording(runId, 'runs/agent.wav')).toEqual({ kind: 'stored' });
    expect(await store.admitAgentRecording(runId, WAIT_MS)).toEqual({ kind: 'exists' });
  });

  it('leaves a run without a recording incomplete while an upload admitted after the collector read it may be arriving, alone or grouped', async () => {
    const alone = await endedCall();
    const grouped = await endedCall();
    // The collector read each run with no session started; the runtime's upload is admitted as it fetches the carrier's.
    for (const runId of [alone, grouped]) await store.admitAgentRecording(runId, WAIT_MS);
    const artifacts = { transcriptKey: 'runs/transcript.json', recordingKey: 'runs/carrier.wav', agentTurns: 0, uploadWaitMs: WAIT_MS };
    expect(await store.completeArtifacts(alone, artifacts)).toBe(false);
    expect(await store.completeArtifactsMany([{ runId: grouped, ...artifacts }])).toEqual([]);

    // The upload stored, the run completes with it in place of the carrier's.
    for (const runId of [alone, grouped]) expect(await store.recordAgentRecording(runId, `runs/${runId}-agent.wav`)).toEqual({ kind: 'stored' });
    expect(await store.completeArtifacts(alone, artifacts)).toBe(true);
    expect(await store.completeArtifactsMany([{ runId: grouped, ...artifacts }])).toEqual([grouped]);
    for (const runId of [alone, grouped]) {
      expect(await store.findById(runId)).toMatchObject({ isCompleted: true, recordingKey: `runs/${runId}-agent.wav` });
    }
  });
});
