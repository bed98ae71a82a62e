import { ConcurrencyLimiter, RedisClient } from '@app/queue';
import { TelephonyProviders } from '@app/telephony';
import { CarrierRequestFailed } from '@app/telephony/carrier-http';
import { CallPlacer } from '../../apps/dialer/src/calls/call-placer.service';
import { CarrierPause, UNANSWERED_BEFORE_PAUSE } from '../../apps/dialer/src/calls/carrier-pause';
import { neverConnected } from '../support/carrier-failures';
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

  /** An organization's sandbox configuration with `count` queued runs, and their dial jobs (the first one's included). */
  async function queuedRunsOfOneConfiguration(count: number) {
    const first = await acceptedSandboxRun(apps);
    const jobs = [first.job];
    while (jobs.length < count) {
      const response = await apps.client.post(`/api/v1/public/agent/${first.workflow.triggerUuid}`, { phone_number: '+14155550100' }, { key: first.org.adminKey });
      jobs.push({ runId: response.body.workflow_run_id, organizationId: first.org.organizationId });
    }
    return { ...first, jobs };
  }

  /**
   * A carrier whose connections are never made, each dial waiting 2.5 s for its handshake on the pause's clock (which
   * `advance` moves on too) until `answerAgain`. `restore` puts the clock and the sandbox back and forgets the pause.
   */
  function carrierThatStopsConnecting() {
    const pause = apps.dialer!.get(CarrierPause);
    const clock = pause.now;
    let skewMs = 0;
    let answering = false;
    pause.now = () => clock() + skewMs;
    const sandbox = apps.dialer!.get(TelephonyProviders).get('sandbox');
    const placeCall = sandbox.placeCall.bind(sandbox);
    const dials = jest.spyOn(sandbox, 'placeCall').mockImplementation(async (call) => {
      if (answering) return placeCall(call);
      skewMs += 2_500;
      throw neverConnected('UND_ERR_CONNECT_TIMEOUT');
    });
    return {
      pause,
      dials,
      advance: (ms: number) => (skewMs += ms),
      answerAgain: () => (answering = true),
      restore: (configurationId: number) => {
        dials.mockRestore();
        pause.now = clock;
        pause.answered(configurationId);
      },
    };
  }

  it("pauses that configuration's dials, without asking the carrier or spending an attempt, while another organization's go out", async () => {
    const unanswering = await queuedRunsOfOneConfiguration(UNANSWERED_BEFORE_PAUSE + 1);
    const { jobs } = unanswering;
    const other = await acceptedSandboxRun(apps);
    const sandbox = apps.dialer!.get(TelephonyProviders).get('sandbox');
    const placeCall = sandbox.placeCall.bind(sandbox);
    const runsOfUnanswering = new Set(jobs.map((job) => job.runId));
    // The carrier's API takes that configuration's dial requests and answers none (its account's region hangs, say).
    const dials = jest.spyOn(sandbox, 'placeCall').mockImplementation(async (call) => {
      if (!runsOfUnanswering.has(call.runId)) return placeCall(call);
      const timedOut = new CarrierRequestFailed('sandbox request POST /calls failed: no answer within 15000 ms', true, {
        cause: new DOMException('The operation was aborted due to timeout', 'TimeoutError'),
      });
      throw new Error('sandbox: no answer (TimeoutError); the carrier may or may not have acted on it', { cause: timedOut });
    });
    // Asked about those dials afterwards, it cannot tell either.
    const lookups = jest.spyOn(sandbox, 'lookupCall').mockImplementation(async () => ({ kind: 'unknown' }));
    const placer = apps.dialer!.get(CallPlacer);
    try {
      // Each a dial whose outcome is unknown: left `dialing` for its events or the reaper, never dialed again.
      for (const job of jobs.slice(0, UNANSWERED_BEFORE_PAUSE)) {
        expect(await placer.place(job)).toEqual({ kind: 'done', outcome: 'unknown' });
      }
      const paused = await placer.place(jobs[UNANSWERED_BEFORE_PAUSE]);
      expect(paused).toMatchObject({ kind: 'delay', reason: 'carrier_unresponsive' });
      expect(paused.kind === 'delay' && paused.untilMs - Date.now()).toBeGreaterThan(4_000);
      expect(dials.mock.calls.filter(([call]) => call.runId === jobs[UNANSWERED_BEFORE_PAUSE].runId)).toHaveLength(0);
      const [run] = await apps.dataSource.query(`SELECT status FROM workflow_runs WHERE id = $1`, [jobs[UNANSWERED_BEFORE_PAUSE].runId]);
      expect(run.status).toBe('queued');

      expect(await placer.place(other.job)).toEqual({ kind: 'done', outcome: 'placed' });
      expect((await sandboxDialsByRun(apps.dataSource, [other.job.runId])).get(other.job.runId)).toBe(1);

      // Paused for ten minutes in all, the run ends, never dialed: a carrier that never answers again does not keep its
      // runs queued for good, nor have them all dial at once.
      const waitedLong = await placer.place(jobs[UNANSWERED_BEFORE_PAUSE], { carrierPausedMs: 10 * 60_000 });
      expect(waitedLong).toEqual({ kind: 'done', outcome: 'failed' });
      expect(dials.mock.calls.filter(([call]) => call.runId === jobs[UNANSWERED_BEFORE_PAUSE].runId)).toHaveLength(0);
      const [ended] = await apps.dataSource.query(`SELECT status, end_reason FROM workflow_runs WHERE id = $1`, [jobs[UNANSWERED_BEFORE_PAUSE].runId]);
      expect(ended).toEqual({ status: 'failed', end_reason: 'carrier_unresponsive' });
    } finally {
      dials.mockRestore();
      lookups.mockRestore();
      apps.dialer!.get(CarrierPause).answered(unanswering.configuration.id);
    }
  });

  it('pauses for connections that were not made after seconds (a handshake that timed out), which held their workers', async () => {
    const slow = await queuedRunsOfOneConfiguration(UNANSWERED_BEFORE_PAUSE + 1);
    const { jobs } = slow;
    // Never connected, as a refusal is, but after 2.5 s of waiting for the handshake (on the pause's clock).
    const carrier = carrierThatStopsConnecting();
    const { dials } = carrier;
    try {
      const placer = apps.dialer!.get(CallPlacer);
      for (const job of jobs.slice(0, UNANSWERED_BEFORE_PAUSE)) expect(await placer.place(job)).toMatchObject({ kind: 'delay', reason: 'carrier_unreachable' });
      expect(await placer.place(jobs[UNANSWERED_BEFORE_PAUSE])).toMatchObject({ kind: 'delay', reason: 'carrier_unresponsive' });
      expect(dials).toHaveBeenCalledTimes(UNANSWERED_BEFORE_PAUSE);
    } finally {
      carrier.restore(slow.configuration.id);
    }
  });

  it('does not pause for connections refused, which fail at once and hold no worker: each run spends its own retries', async () => {
    const { jobs } = await queuedRunsOfOneConfiguration(UNANSWERED_BEFORE_PAUSE + 1);
    const sandbox = apps.dialer!.get(TelephonyProviders).get('sandbox');
    const dials = jest.spyOn(sandbox, 'placeCall').mockRejectedValue(
      neverConnected('ECONNREFUSED'),
    );
    try {
      for (const job of jobs) expect(await apps.dialer!.get(CallPlacer).place(job)).toMatchObject({ kind: 'delay', reason: 'carrier_unreachable' });
      expect(dials).toHaveBeenCalledTimes(jobs.length);
    } finally {
      dials.mockRestore();
    }
  });

  it("after a pause lets the first dial that can go now probe the carrier, not one that asked first and was paced ahead", async () => {
    const { jobs, configuration } = await queuedRunsOfOneConfiguration(UNANSWERED_BEFORE_PAUSE + 2);
    const carrier = carrierThatStopsConnecting();
    const { pause } = carrier;
    const placer = apps.dialer!.get(CallPlacer);
    const admit = jest.spyOn(placer as unknown as { admit: (...args: unknown[]) => Promise<unknown> }, 'admit');
    try {
      for (const job of jobs.slice(0, UNANSWERED_BEFORE_PAUSE)) await placer.place(job);
      const [pacedAhead, due] = jobs.slice(UNANSWERED_BEFORE_PAUSE);
      expect(await placer.place(pacedAhead)).toMatchObject({ kind: 'delay', reason: 'carrier_unresponsive' });
      // The pause is over and the carrier answers again. The first dial to ask comes back to a pacing instant minutes
      // ahead (a campaign's backlog): it goes on waiting for it, and dials nothing.
      carrier.advance(6_000);
      carrier.answerAgain();
      admit.mockResolvedValueOnce({ kind: 'paced', waitMs: 600_000 });
      expect(await placer.place(pacedAhead)).toMatchObject({ kind: 'delay', reason: 'pacing' });
      // The next, due now, is the probe: it dials, and its answer opens the way for every dial of the configuration.
      expect(await placer.place(due)).toEqual({ kind: 'done', outcome: 'placed' });
      expect((await sandboxDialsByRun(apps.dataSource, [due.runId])).get(due.runId)).toBe(1);
      expect(pause.ask(configuration.id, pacedAhead.runId)).toEqual({ waitMs: 0, probe: false });
    } finally {
      admit.mockRestore();
      carrier.restore(configuration.id);
    }
  });

  it("leaves a live call its slot when a copy of its job, admitted after a pause, finds the probe's turn taken", async () => {
    const { jobs, configuration, workflow } = await queuedRunsOfOneConfiguration(UNANSWERED_BEFORE_PAUSE + 1);
    const carrier = carrierThatStopsConnecting();
    const { pause } = carrier;
    const placer = apps.dialer!.get(CallPlacer);
    const admitter = placer as unknown as { admit: (...args: unknown[]) => Promise<unknown> };
    const admit = admitter.admit.bind(placer);
    const taken = jest.spyOn(admitter, 'admit');
    const slots = apps.dialer!.get(ConcurrencyLimiter);
    try {
      for (const job of jobs.slice(0, UNANSWERED_BEFORE_PAUSE)) await placer.place(job);
      // The last run's call is live (its first job dialed it; a copy of that job runs after its lock lapsed), its slot held.
      const live = jobs[UNANSWERED_BEFORE_PAUSE];
      await apps.dialer!.get(RedisClient).redis.zadd(slots.key(configuration.id), Date.now() + 60_000, String(live.runId));
      await apps.dataSource.query(`UPDATE workflow_runs SET status = 'in_progress', provider_call_id = 'SB-live', answered_at = now() WHERE id = $1`, [
        live.runId,
      ]);
      carrier.advance(6_000);
      // While the copy is admitted (renewing the live call's slot), another dial takes the probe's turn.
      taken.mockImplementationOnce(async (...args: unknown[]) => {
        const admitted = await admit(...args);
        expect(pause.takeProbe(configuration.id, jobs[0].runId)).toBe(true);
        return admitted;
      });
      // The job as the gateway enqueued it, with its route: it reads the run only with its claim.
      const route = { telephonyConfigurationId: configuration.id, workflowId: workflow.workflowId, environment: 'production' as const, triggerUuid: workflow.triggerUuid };
      expect(await placer.place({ ...live, route })).toMatchObject({ kind: 'delay', reason: 'carrier_unresponsive' });
      expect(taken).toHaveBeenCalled();
      expect(await slots.lease(configuration.id, live.runId)).not.toBeNull();
    } finally {
      taken.mockRestore();
      carrier.restore(configuration.id);
    }
  });
});

