import { CarrierError, TelephonyProviders } from '@app/telephony';
import { CallPlacer } from '../../apps/dialer/src/calls/call-placer.service';
import { CarrierPause, UNANSWERED_BEFORE_PAUSE } from '../../apps/dialer/src/calls/carrier-pause';
import { sandboxDialsByRun } from '../support/fixtures';
import { acceptedSandboxRun } from '../support/queued-sandbox-run';
import { startTestAppsWithPausedWorkers, TestApps } from '../support/test-apps';

/**
 * A carrier that stops answering one configuration's dials must not hold the
 * dialer's workers for every other organization's calls. The workers are
 * paused; the test runs the attempts itself.
 */
describe("a carrier that does not answer a configuration's dials", () => {
  let apps: TestApps;

  beforeAll(async () => {
    apps = await startTestAppsWithPausedWorkers();
  });
  afterAll(() => apps.close());

  it("pauses that configuration's dials, without asking the carrier or spending an attempt, while another organization's go out", async () => {
    const unanswering = await acceptedSandboxRun(apps);
    const jobs = [unanswering.job];
    for (let i = 0; i < UNANSWERED_BEFORE_PAUSE; i++) {
      const response = await apps.client.post(
        `/api/v1/public/agent/${unanswering.workflow.triggerUuid}`,
        { phone_number: '+14155550100' },
        { key: unanswering.org.adminKey },
      );
      jobs.push({ runId: response.body.workflow_run_id, organizationId: unanswering.org.organizationId });
    }
    const other = await acceptedSandboxRun(apps);
    const sandbox = apps.dialer!.get(TelephonyProviders).get('sandbox');
    const placeCall = sandbox.placeCall.bind(sandbox);
    const runsOfUnanswering = new Set(jobs.map((job) => job.runId));
    // No connection to the carrier's API for that configuration's dials (its account's region down, say).
    const dials = jest.spyOn(sandbox, 'placeCall').mockImplementation(async (call) => {
      if (!runsOfUnanswering.has(call.runId)) return placeCall(call);
      throw new CarrierError('sandbox: carrier unreachable (ECONNREFUSED)', {
        reason: 'carrier_unreachable',
        permanent: false,
        notProcessed: true,
        carrierCode: 'ECONNREFUSED',
      });
    });
    const placer = apps.dialer!.get(CallPlacer);
    try {
      for (const job of jobs.slice(0, UNANSWERED_BEFORE_PAUSE)) {
        expect(await placer.place(job)).toMatchObject({ kind: 'delay', reason: 'carrier_unreachable' });
      }
      const paused = await placer.place(jobs[UNANSWERED_BEFORE_PAUSE]);
      expect(paused).toMatchObject({ kind: 'delay', reason: 'carrier_unresponsive' });
      expect(paused.kind === 'delay' && paused.untilMs - Date.now()).toBeGreaterThan(4_000);
      expect(dials.mock.calls.filter(([call]) => call.runId === jobs[UNANSWERED_BEFORE_PAUSE].runId)).toHaveLength(0);
      const [run] = await apps.dataSource.query(`SELECT status FROM workflow_runs WHERE id = $1`, [jobs[UNANSWERED_BEFORE_PAUSE].runId]);
      expect(run.status).toBe('queued');

      expect(await placer.place(other.job)).toEqual({ kind: 'done', outcome: 'placed' });
      expect((await sandboxDialsByRun(apps.dataSource, [other.job.runId])).get(other.job.runId)).toBe(1);
    } finally {
      dials.mockRestore();
      apps.dialer!.get(CarrierPause).answered(unanswering.configuration.id);
    }
  });
});
