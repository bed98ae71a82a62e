import { WorkflowRun } from '@app/persistence';
import { TelephonyProviders } from '@app/telephony';
import { RECORDING_FETCHES_AT_ONCE, RunArtifactsCollector } from '../../apps/dialer/src/call-events/run-artifacts-collector.service';
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

  it(`fetches at most ${RECORDING_FETCHES_AT_ONCE} at once, and stores every one`, async () => {
    const org = await createOrganization(apps.dataSource);
    const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 0, talk_ms: 0 } });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
    // Completed calls finished without their recordings, which the carrier announces afterwards.
    const runIds: number[] = [];
    for (let i = 0; i < 12; i++) {
      const run = await apps.dataSource.getRepository(WorkflowRun).save({
        organizationId: org.organizationId,
        workflowId: workflow.workflowId,
        name: `recording-${i}`,
        status: 'completed',
        environment: 'production',
        triggerUuid: workflow.triggerUuid,
        telephonyConfigurationId: config.id,
        provider: 'sandbox',
        phoneNumber: '+14155550100',
        fromNumber: '+15005550006',
        providerCallId: `SB-recording-${i}`,
        isCompleted: true,
        endedAt: new Date(),
        carrierRecordingUrl: `https://recordings.example/${i}.wav`,
        logs: { events: [] },
      });
      runIds.push(run.id);
    }
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
      await Promise.all(runIds.map((runId) => collector.storeLateRecording(runId)));
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
});
