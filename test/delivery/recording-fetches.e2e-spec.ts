import { ARTIFACT_STORAGE, ArtifactStorage } from '@app/artifacts';
import { WorkflowRun } from '@app/persistence';
import { carrierNetworkFailure, TelephonyProviders } from '@app/telephony';
import { DownloadRefused } from '../../libs/telephony/src/carrier-http';
import {
  RECORDING_FETCHES_AT_ONCE,
  RecordingFetchesBusy,
  RunArtifactsCollector,
} from '../../apps/dialer/src/call-events/run-artifacts-collector.service';
import { agentGraph, createOrganization, seedSandboxConfiguration, seedWorkflow } from '../support/fixtures';
import { startTestAppsWithPausedWorkers, TestApps } from '../support/test-apps';

/**
 * A carrier's recording is read whole into the dialer's memory (up to
 * 100 MiB) before it is stored. However many calls end at once, a dialer
 * fetches only a few at a time.
 */
describe('carrier recordings fetched by a dialer', () => {
  let apps: TestApps;

  beforeAll(async () => {
    apps = await startTestAppsWithPausedWorkers();
  });
  afterAll(() => apps.close());

  /** A sandbox organization, configuration and agent of their own, and a maker of its completed runs whose carrier recording was announced. */
  async function completedRuns() {
    const org = await createOrganization(apps.dataSource);
    const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 0, talk_ms: 0 } });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
    return (name: string, isCompleted: boolean, carrierRecordingUrl: string) =>
      apps.dataSource.getRepository(WorkflowRun).save({
        organizationId: org.organizationId,
        workflowId: workflow.workflowId,
        name,
        status: 'completed',
        environment: 'production',
        triggerUuid: workflow.triggerUuid,
        telephonyConfigurationId: config.id,
        provider: 'sandbox',
        phoneNumber: '+14155550100',
        fromNumber: '+15005550006',
        providerCallId: `SB-${name}`,
        isCompleted,
        endedAt: new Date(),
        carrierRecordingUrl,
        logs: { events: [] },
      });
  }

  it(`fetches at most ${RECORDING_FETCHES_AT_ONCE} at once, and stores every one`, async () => {
    const completedRun = await completedRuns();
    // Completed calls finished without their recordings, which the carrier announces afterwards.
    const runIds: number[] = [];
    for (let i = 0; i < 12; i++) runIds.push((await completedRun(`recording-${i}`, true, `https://recordings.example/${i}.wav`)).id);
    let fetching = 0;
    let most = 0;
    let calls = 0;
    const fetch = jest.spyOn(apps.dialer!.get(TelephonyProviders).get('sandbox') as never, 'fetchRecording').mockImplementation((async () => {
      calls += 1;
      fetching += 1;
      most = Math.max(most, fetching);
      await new Promise((resolve) => setTimeout(resolve, 50));
      fetching -= 1;
      return { contentType: 'audio/wav', body: Buffer.from('RIFF recording') };
    }) as never);
    try {
      const collector = apps.dialer!.get(RunArtifactsCollector);
      // As the events' jobs do: one that finds every fetch taken comes back shortly, rather than wait in its worker.
      let turnedAway = 0;
      const storeLate = async (runId: number): Promise<void> => {
        for (;;) {
          try {
            return await collector.storeLateRecording(runId);
          } catch (error) {
            if (!(error instanceof RecordingFetchesBusy)) throw error;
            turnedAway += 1;
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        }
      };
      await Promise.all(runIds.map(storeLate));
      expect(turnedAway).toBeGreaterThan(0);
    } finally {
      fetch.mockRestore();
    }
    expect(calls).toBe(12);
    expect(most).toBe(RECORDING_FETCHES_AT_ONCE);
    const stored: Array<{ n: number }> = await apps.dataSource.query(
      `SELECT count(*)::int AS n FROM workflow_runs WHERE id = ANY($1::bigint[]) AND recording_key IS NOT NULL`,
      [runIds],
    );
    expect(stored[0].n).toBe(12);
  });

  it('leaves out at once, and says so in the log, a recording whose download is refused (an address that is not public)', async () => {
    const made = await completedRuns();
    const completedRun = (name: string, isCompleted: boolean) => made(name, isCompleted, 'https://storage.example/private.wav');
    // One run finishing with its recording, one whose recording was announced after it finished.
    const finishing = await completedRun('refused-finishing', false);
    const late = await completedRun('refused-late', true);
    const message = 'Sandbox recording download: refused to connect to storage.example: it does not resolve to a public address';
    const refuse = jest
      .spyOn(apps.dialer!.get(TelephonyProviders).get('sandbox') as never, 'fetchRecording')
      .mockImplementation((async () => {
        throw carrierNetworkFailure('Sandbox recording download', new DownloadRefused('refused to connect to storage.example: it does not resolve to a public address'));
      }) as never);
    try {
      const collector = apps.dialer!.get(RunArtifactsCollector);
      // Neither throws (which would retry the job, and the run would wait for the reaper's give-up an hour later).
      await collector.collect(finishing.id);
      await collector.storeLateRecording(late.id);
    } finally {
      refuse.mockRestore();
    }
    const rows: Array<{ id: number; is_completed: boolean; recording_key: string | null; transcript_key: string | null; logs: { events: Array<{ event: string; detail?: { message?: string } }> } }> =
      await apps.dataSource.query(`SELECT id, is_completed, recording_key, transcript_key, logs FROM workflow_runs WHERE id = ANY($1::bigint[]) ORDER BY id`, [
        [finishing.id, late.id],
      ]);
    for (const row of rows) {
      expect(row.is_completed).toBe(true);
      expect(row.logs.events.find((entry) => entry.event === 'artifacts.recording_unavailable')?.detail?.message).toBe(message);
    }
    // The finishing run got its transcript (and the sandbox's own recording, as any run without a carrier one); the
    // late one stays without a recording.
    expect(rows[0].transcript_key).not.toBeNull();
    expect(rows[1].recording_key).toBeNull();
  });

  it("tries a late recording again with its job, and on the job's last try leaves it out and says so, the carrier's failure or our storage's", async () => {
    const completedRun = await completedRuns();
    const byCarrier = await completedRun('late-carrier-failing', true, 'https://recordings.example/failing.wav');
    const byStorage = await completedRun('late-storage-failing', true, 'https://recordings.example/fine.wav');
    const sandbox = apps.dialer!.get(TelephonyProviders).get('sandbox') as never;
    const storage = apps.dialer!.get<ArtifactStorage>(ARTIFACT_STORAGE);
    const put = storage.put.bind(storage);
    const fetch = jest.spyOn(sandbox, 'fetchRecording').mockImplementation((async (url: string) => {
      if (url.endsWith('failing.wav')) throw new Error('Sandbox recording download answered 503');
      return { contentType: 'audio/wav', body: Buffer.from('RIFF recording') };
    }) as never);
    const full = jest.spyOn(storage, 'put').mockImplementation(async (name, ...rest) => {
      if (name.includes(String(byStorage.id))) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      return put(name, ...rest);
    });
    const notes = async (runId: number) =>
      (
        await apps.dataSource.query(
          `SELECT entry->'detail'->>'message' AS message FROM workflow_runs, jsonb_array_elements(logs->'events') AS entry
            WHERE id = $1 AND entry->>'event' = 'artifacts.recording_unavailable'`,
          [runId],
        )
      ).map((row: { message: string }) => row.message);
    try {
      const collector = apps.dialer!.get(RunArtifactsCollector);
      // Before the last try: thrown, for the job to try again, and nothing noted.
      await expect(collector.storeLateRecording(byCarrier.id)).rejects.toThrow('answered 503');
      await expect(collector.storeLateRecording(byStorage.id)).rejects.toThrow('ENOSPC');
      expect([await notes(byCarrier.id), await notes(byStorage.id)]).toEqual([[], []]);
      // The last try: the run is complete, so nothing comes back to it afterwards.
      await collector.storeLateRecording(byCarrier.id, true);
      await collector.storeLateRecording(byStorage.id, true);
    } finally {
      fetch.mockRestore();
      full.mockRestore();
    }
    expect(await notes(byCarrier.id)).toEqual(["The carrier's recording could not be fetched; the run is complete without it"]);
    expect(await notes(byStorage.id)).toEqual(["The carrier's recording could not be stored; the run is complete without it"]);
  });
});
