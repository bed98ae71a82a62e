import { SandboxCall } from '@app/persistence';
import { TelephonyProviders } from '@app/telephony';
import { RecordingFetchesBusy, RunArtifactsCollector } from '../../apps/dialer/src/call-events/run-artifacts-collector.service';
import { RunReaper } from '../../apps/dialer/src/recovery/run-reaper.service';
import { seedForStrandedRuns, seedSandboxConfiguration, stillRinging, StrandedRunSeed, strandedRun } from '../support/fixtures';
import { neverConnected } from '../support/carrier-failures';
import { startTestApps, TestApps } from '../support/test-apps';

/**
 * How often the reaper asks a carrier about a run that stopped moving. Its
 * rounds are run by hand here (its own come every 10 minutes).
 */
describe('the reaper asks carriers about stuck runs only so often', () => {
  let apps: TestApps;
  let seed: StrandedRunSeed;

  beforeAll(async () => {
    apps = await startTestApps({
      env: { REAPER_INTERVAL_MS: '600000', RECONCILE_AFTER_SECONDS: '1', DIAL_TIMEOUT_SECONDS: '8', RING_TIMEOUT_SECONDS: '8' },
    });
    seed = await seedForStrandedRuns(apps.dataSource);
  });
  afterAll(() => apps.close());

  const reaper = () => apps.dialer!.get(RunReaper);
  const sandbox = () => apps.dialer!.get(TelephonyProviders).get('sandbox');
  const statusOf = async (runId: number) =>
    (await apps.dataSource.query(`SELECT status, end_reason FROM workflow_runs WHERE id = $1`, [runId]))[0] as { status: string; end_reason: string | null };

  /** A run whose call rings on at the sandbox, though no event reached it. */
  const ringing = (runId: number) => stillRinging(apps.dataSource, runId, `SB-ringing-${runId}`);

  it('looks a ringing run up once, not every round, until its limit, when it looks again and ends it', async () => {
    const lookups = jest.spyOn(sandbox(), 'lookupCall');
    try {
      // Stuck for 5 s of its 8 s: looked up now, and (its next look due in 10 s) not again before its limit, 3 s on.
      const runId = await strandedRun(apps.dataSource, seed, 'ringing', null, ringing, '5 seconds');
      const ofRun = () => lookups.mock.calls.filter(([call]) => call.runId === runId).length;
      for (let round = 0; round < 5; round++) await reaper().round();
      expect(ofRun()).toBe(1);
      expect(await statusOf(runId)).toEqual({ status: 'ringing', end_reason: null });

      await new Promise((resolve) => setTimeout(resolve, 3_200));
      await reaper().round();
      expect(ofRun()).toBe(2);
      expect(await statusOf(runId)).toEqual({ status: 'failed', end_reason: 'ring_timeout' });
    } finally {
      lookups.mockRestore();
    }
  });

  it("stops asking a carrier that did not answer for a while, ending its runs at their limits, while other carriers' runs are asked", async () => {
    const away = await seedSandboxConfiguration(apps.dataSource, seed.organizationId, { settings: { ring_ms: 20, talk_ms: 50 }, isDefaultOutbound: false });
    const stuck: number[] = [];
    for (let i = 0; i < 3; i++) stuck.push(await strandedRun(apps.dataSource, { ...seed, configId: away.id }, 'ringing', `SB-away-${i}`));
    const elsewhere = await strandedRun(apps.dataSource, seed, 'ringing', null, ringing, '10 minutes');
    // Just past its limit: left for a look-up of its own once the carrier may be asked again (its answer may have been
    // lost, and its call be live), not ended unasked.
    const justPast = await strandedRun(apps.dataSource, { ...seed, configId: away.id }, 'ringing', 'SB-away-just-past', undefined, '12 seconds');
    stuck.push(justPast);
    const sandboxLookup = sandbox().lookupCall.bind(sandbox());
    // The away configuration's carrier is never reached (a connection refused): every look-up there fails so.
    const lookups = jest.spyOn(sandbox(), 'lookupCall').mockImplementation(async (call) => {
      if (!stuck.includes(call.runId)) return sandboxLookup(call);
      throw neverConnected('ECONNREFUSED');
    });
    try {
      await reaper().round();

      const ofRuns = (runIds: number[]) => lookups.mock.calls.filter(([call]) => runIds.includes(call.runId)).length;
      // One look-up found the carrier away; the others were not asked of it, and those long past their limits ended.
      expect(ofRuns(stuck)).toBe(1);
      for (const runId of stuck.filter((id) => id !== justPast)) expect(await statusOf(runId)).toEqual({ status: 'failed', end_reason: 'ring_timeout' });
      expect(await statusOf(justPast)).toEqual({ status: 'ringing', end_reason: null });
      expect(ofRuns([elsewhere])).toBe(1);
      expect(await statusOf(elsewhere)).toEqual({ status: 'failed', end_reason: 'ring_timeout' });
    } finally {
      lookups.mockRestore();
    }
  });

  it('applies a completed call its look-up found though every recording fetch is taken: no failed round, the run ends completed', async () => {
    // Answered and hung up at the sandbox long ago; no event of it reached us, so the run reads ringing.
    const talked = async (runId: number) => {
      await apps.dataSource.getRepository(SandboxCall).save({
        callId: `SB-talked-${runId}`,
        runId,
        toNumber: '+14155550100',
        outcome: 'answered',
        ringMs: 10,
        talkMs: 20,
        canceledAt: null,
        createdAt: new Date(Date.now() - 60_000),
      });
      await apps.dataSource.query(`UPDATE workflow_runs SET provider_call_id = $2 WHERE id = $1`, [runId, `SB-talked-${runId}`]);
    };
    const runId = await strandedRun(apps.dataSource, seed, 'ringing', null, talked, '10 minutes');
    const collector = apps.dialer!.get(RunArtifactsCollector);
    const collect = collector.collect.bind(collector);
    // A call event's collection finds every fetch turn taken; the reaper's own (forced) waits for one.
    const busy = jest
      .spyOn(collector, 'collect')
      .mockImplementation(async (id: number, force = false, giveUp = false) => (force ? collect(id, force, giveUp) : Promise.reject(new RecordingFetchesBusy(id))));
    try {
      await reaper().round();
      expect(busy).toHaveBeenCalledWith(runId);
      expect(await statusOf(runId)).toEqual({ status: 'completed', end_reason: 'completed' });
      // Not counted as a failed reaping (which would back the run off, and skip the look-up's later events).
      expect((reaper() as unknown as { failures: Map<number, unknown> }).failures.has(runId)).toBe(false);
    } finally {
      busy.mockRestore();
    }
  });
});

