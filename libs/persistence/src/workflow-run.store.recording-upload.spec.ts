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
    expect(await store.admitAgentRecording(runId)).toEqual({ kind: 'stored', admittedAt: expect.any(Date) });
    expect((await store.findById(runId))?.agentSessionStartedAt).not.toBeNull();

    expect(await store.closeAgentSession(runId, WAIT_MS)).toBeNull();
    expect((await store.findById(runId))?.agentSessionEndedAt).toBeNull();
    // Past the wait (the upload's request has timed out), or once the recording is in, the session closes.
    await dataSource.query(`UPDATE workflow_runs SET recording_upload_admitted_at = now() - interval '2 minutes' WHERE id = $1`, [runId]);
    expect(await store.closeAgentSession(runId, WAIT_MS)).toEqual([]);
  });

  it("keeps a carrier recording fetched as the runtime's upload began from taking its place, while the upload may be arriving", async () => {
    const runId = await endedCall();
    await store.admitAgentRecording(runId);

    expect(await store.recordRecordingIfNone(runId, 'runs/carrier.wav', WAIT_MS)).toBe(false);
    expect(await store.recordAgentRecording(runId, 'runs/agent.wav')).toEqual({ kind: 'stored' });
    expect((await store.findById(runId))?.recordingKey).toBe('runs/agent.wav');
  });

  it('stores an upload the dialer closed the session under, on a run finished meanwhile, and notes it came late', async () => {
    const runId = await endedCall();
    await store.admitAgentRecording(runId);
    await dataSource.query(`UPDATE workflow_runs SET recording_upload_admitted_at = now() - interval '2 minutes' WHERE id = $1`, [runId]);
    expect(await store.closeAgentSession(runId, WAIT_MS)).toEqual([]);
    expect(await store.completeArtifacts(runId, { transcriptKey: 'runs/transcript.json', recordingKey: null, agentTurns: 0 })).toBe(true);
    // The session is closed: a new upload is refused on its head.
    expect(await store.admitAgentRecording(runId)).toEqual({ kind: 'closed' });

    expect(await store.recordAgentRecording(runId, 'runs/agent.wav')).toEqual({ kind: 'stored' });
    const run = await store.findById(runId);
    expect(run?.recordingKey).toBe('runs/agent.wav');
    expect(run?.logs.events?.at(-1)).toMatchObject({ event: 'artifacts.late_recording_stored', detail: { source: 'agent_runtime' } });
    // A run keeps one recording.
    expect(await store.recordAgentRecording(runId, 'runs/again.wav')).toEqual({ kind: 'exists' });
  });

  it('refuses an upload whose session the runtime ended itself while it arrived, as every later request is', async () => {
    const runId = await endedCall();
    await store.admitAgentRecording(runId);
    expect(await store.recordAgentReport(runId, { ended: true })).toMatchObject({ kind: 'stored' });

    expect(await store.recordAgentRecording(runId, 'runs/after-end.wav')).toEqual({ kind: 'closed' });
    expect((await store.findById(runId))?.recordingKey).toBeNull();
  });

  it('refuses an upload of a run that ended other than completed while it arrived', async () => {
    const [runId] = await storeQueuedRuns(store, 1, { organizationId: ORG });
    await store.transition(runId, 'dialing', 'dialer.dialing');
    await store.transition(runId, 'in_progress', 'carrier.answered', { answeredAt: new Date() });
    await store.admitAgentRecording(runId);
    await store.transition(runId, 'failed', 'reaper.failed', { endReason: 'max_duration_exceeded' });

    expect(await store.recordAgentRecording(runId, 'runs/failed.wav')).toEqual({ kind: 'closed' });
  });
});
