import { SandboxCall, WorkflowRun, WorkflowRunStore } from '@app/persistence';
import { ConcurrencyLimiter, RedisClient } from '@app/queue';
import { CarrierWebhooks, TelephonyProvider, TelephonyProviders } from '@app/telephony';
import {
  runsWhenComplete,
  sandboxDialsByRun,
  seedForStrandedRuns,
  seedSandboxConfiguration,
  stillRinging,
  StrandedRunSeed,
  strandedRun,
} from '../support/fixtures';
import { RunDispatcher } from '../../apps/dialer/src/recovery/run-dispatcher.service';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

describe('the reaper ends or repairs runs that stopped moving', () => {
  let apps: TestApps;
  let seed: StrandedRunSeed;

  beforeAll(async () => {
    apps = await startTestApps({
      env: { REAPER_INTERVAL_MS: '200', RECONCILE_AFTER_SECONDS: '1', DIAL_TIMEOUT_SECONDS: '2', RING_TIMEOUT_SECONDS: '2' },
    });
    seed = await seedForStrandedRuns(apps.dataSource, 10);
  });
  afterAll(() => apps.close());

  it('fails a run that rings past the limit with end_reason ring_timeout', async () => {
    const runId = await strandedRun(apps.dataSource, seed, 'ringing', 'SB-unknown-call');
    const [run] = await runsWhenComplete(apps.dataSource, [runId]);
    expect(run).toMatchObject({ status: 'failed', end_reason: 'ring_timeout' });
  });

  it('dials again a run whose dialer died before the carrier got the request, exactly once', async () => {
    const runId = await strandedRun(apps.dataSource, seed, 'dialing', null);
    const [run] = await runsWhenComplete(apps.dataSource, [runId]);
    expect(run.status).toBe('completed');
    expect(run.logs.events.map((event: { event: string }) => event.event)).toContain('reaper.requeued');
    expect((await sandboxDialsByRun(apps.dataSource, [runId])).get(runId)).toBe(1);
  });

  it('frees the dead dial\'s slot when it requeues the run, not one the run\'s job renewed for its new dial meanwhile', async () => {
    const slots = apps.dialer!.get(ConcurrencyLimiter);
    const redis = apps.dialer!.get(RedisClient).redis;
    const store = apps.dialer!.get(WorkflowRunStore);
    const transition = store.transition.bind(store);
    let runId = 0;
    let renewed: string | null = null;
    // The run's job comes back as soon as the run is queued, and its admission renews the slot, before the reaper frees it.
    const requeue = jest.spyOn(store, 'transition').mockImplementation(async (...args) => {
      const moved = await transition(...args);
      if (moved && args[0] === runId && args[2] === 'reaper.requeued') {
        renewed = String(Date.now() + 3_600_000);
        await redis.zadd(slots.key(seed.configId), renewed, String(runId));
      }
      return moved;
    });
    const dispatcher = apps.dialer!.get(RunDispatcher);
    const ensureJobs = dispatcher.ensureJobs.bind(dispatcher);
    let slotAfterRelease: string | null | undefined;
    const enqueue = jest.spyOn(dispatcher, 'ensureJobs').mockImplementation(async (runs) => {
      if (runs.some((run) => run.id === runId)) slotAfterRelease = await slots.lease(seed.configId, runId);
      return ensureJobs(runs);
    });
    try {
      runId = await strandedRun(apps.dataSource, seed, 'dialing', null, (id) =>
        redis.zadd(slots.key(seed.configId), Date.now() + 600_000, String(id)),
      );
      const [run] = await runsWhenComplete(apps.dataSource, [runId]);
      expect(run.logs.events.map((event: { event: string }) => event.event)).toContain('reaper.requeued');
    } finally {
      requeue.mockRestore();
      enqueue.mockRestore();
    }
    expect(renewed).not.toBeNull();
    expect(slotAfterRelease).toBe(renewed);
  });

  it('reconciles a run whose dialer died after the carrier accepted the call, without dialing again', async () => {
    // The carrier has the call (placed 5 s ago, long finished), but the run never learned its id.
    const runId = await strandedRun(apps.dataSource, seed, 'dialing', null, (id) =>
      apps.dataSource.getRepository(SandboxCall).save({
        callId: `SB-reconcile-${id}`,
        runId: id,
        toNumber: '+14155550100',
        outcome: 'answer',
        ringMs: 20,
        talkMs: 50,
        canceledAt: null,
        createdAt: new Date(Date.now() - 5000),
      }),
    );
    const [run] = await runsWhenComplete(apps.dataSource, [runId]);
    expect(run.status).toBe('completed');
    const stored = await apps.dataSource.getRepository(WorkflowRun).findOneByOrFail({ id: runId });
    expect(stored.providerCallId).toBe(`SB-reconcile-${runId}`);
    expect(stored.durationSeconds).toBeCloseTo(0.05);
    expect((await sandboxDialsByRun(apps.dataSource, [runId])).get(runId)).toBe(1);
  });

  it('fails with no_carrier_response, without dialing again, a dialing run whose call id the carrier does not know', async () => {
    // A call id the carrier does not know, so the look-up cannot settle it and nothing may be dialed again. The run
    // knows its call id, so it is the carrier that did not answer for it (dial_outcome_unknown is for a run that never
    // learned one: see the unsettled-claim reaper's tests).
    const runId = await strandedRun(apps.dataSource, seed, 'dialing', 'SB-lost');
    const [run] = await runsWhenComplete(apps.dataSource, [runId]);
    expect(run).toMatchObject({ status: 'failed', end_reason: 'no_carrier_response' });
    expect((await sandboxDialsByRun(apps.dataSource, [runId])).get(runId)).toBe(0);
  });

  it('ends a run at its limit even when its carrier cannot be asked about the call', async () => {
    // Credentials that no longer decrypt (a rotated key): every look-up and hang-up fails.
    const broken = await seedSandboxConfiguration(apps.dataSource, seed.organizationId, {
      settings: { ring_ms: 20, talk_ms: 50 },
      isDefaultOutbound: false,
    });
    await apps.dataSource.query(`UPDATE telephony_configurations SET credentials_encrypted = 'v1.broken.envelope.x' WHERE id = $1`, [broken.id]);
    const runId = await strandedRun(apps.dataSource, { ...seed, configId: broken.id }, 'ringing', 'SB-unreachable');
    const [run] = await runsWhenComplete(apps.dataSource, [runId]);
    expect(run).toMatchObject({ status: 'failed', end_reason: 'ring_timeout' });
  });

  const stillRingingAt = (runId: number, callId: string) => stillRinging(apps.dataSource, runId, callId);

  /** The reaper logged its hang-up of the run's call, and the sandbox call was canceled. */
  async function expectHungUp(runId: number, callId: string): Promise<void> {
    await waitFor(async () => {
      const stored = await apps.dataSource.getRepository(WorkflowRun).findOneByOrFail({ id: runId });
      return stored.logs.events?.some((event) => event.event === 'reaper.hung_up') ? true : undefined;
    }, { what: 'the hang-up' });
    const call = await apps.dataSource.getRepository(SandboxCall).findOneByOrFail({ callId });
    expect(call.canceledAt).not.toBeNull();
  }

  it('hangs up the call of a run that rings past its limit before ending the run', async () => {
    const runId = await strandedRun(apps.dataSource, seed, 'ringing', null, (id) => stillRingingAt(id, `SB-still-ringing-${id}`));
    const [run] = await runsWhenComplete(apps.dataSource, [runId]);
    expect(run).toMatchObject({ status: 'failed', end_reason: 'ring_timeout' });
    // The hang-up follows the end of the run.
    await expectHungUp(runId, `SB-still-ringing-${runId}`);
  });

  /**
   * A run ringing past its limit whose dial holds a slot, its call still
   * ringing at the sandbox (`SB-<label>-<id>`), left to the reaper: it must
   * end the run, hang the call up and, at last, free the slot. `seeded`
   * learns the run's id as soon as it exists, before the reaper can reach it.
   */
  async function reapRingingRunHoldingSlot(label: string, seeded: (id: number) => void = () => undefined): Promise<number> {
    const slots = apps.dialer!.get(ConcurrencyLimiter);
    const redis = apps.dialer!.get(RedisClient).redis;
    const runId = await strandedRun(apps.dataSource, seed, 'ringing', null, async (id) => {
      seeded(id);
      await stillRingingAt(id, `SB-${label}-${id}`);
      // The slot its dial took.
      await redis.zadd(slots.key(seed.configId), Date.now() + 3_600_000, String(id));
    });
    const [run] = await runsWhenComplete(apps.dataSource, [runId]);
    expect(run).toMatchObject({ status: 'failed', end_reason: 'ring_timeout' });
    await expectHungUp(runId, `SB-${label}-${runId}`);
    await waitFor(async () => ((await redis.zscore(slots.key(seed.configId), String(runId))) === null ? true : undefined), {
      what: 'the slot to be freed',
    });
    return runId;
  }

  it("keeps the run's slot taken until the carrier was asked to end its call, then frees it", async () => {
    const slots = apps.dialer!.get(ConcurrencyLimiter);
    const redis = apps.dialer!.get(RedisClient).redis;
    const sandbox = apps.dialer!.get(TelephonyProviders).get('sandbox');
    const endCall = sandbox.endCall.bind(sandbox);
    const slotAtHangUp: Array<string | null> = [];
    const hangUps = jest.spyOn(sandbox, 'endCall').mockImplementation(async (reference) => {
      if (reference.providerCallId?.startsWith('SB-slot-order-')) {
        slotAtHangUp.push(await redis.zscore(slots.key(seed.configId), String(reference.runId)));
      }
      return endCall(reference);
    });
    try {
      await reapRingingRunHoldingSlot('slot-order');
      expect(slotAtHangUp).toEqual([expect.any(String)]);
    } finally {
      hangUps.mockRestore();
    }
  });

  it('hangs up the call of a run it ended though freeing its slot failed, and frees the slot in a later round', async () => {
    const slots = apps.dialer!.get(ConcurrencyLimiter);
    const release = slots.release.bind(slots);
    let runId = 0;
    let failed = false;
    // Redis fails the first release of this run's slot, after the run's move to `failed` was stored.
    const releases = jest.spyOn(slots, 'release').mockImplementation(async (configurationId: number, id: number) => {
      if (id === runId && !failed) {
        failed = true;
        throw new Error('Connection is closed.');
      }
      return release(configurationId, id);
    });
    try {
      // The run is final and never selected again: the hang-up and the slot cannot wait for another reaping of it.
      await reapRingingRunHoldingSlot('slot-blip', (id) => {
        runId = id;
      });
      // Freed in a later round, after the release that failed (the hang-up comes before either).
      expect(failed).toBe(true);
    } finally {
      releases.mockRestore();
    }
  });

  it('completes a run without the carrier recording it could not fetch for an hour, and says so in its log', async () => {
    const runId = await strandedRun(
      apps.dataSource,
      seed,
      'completed',
      'SB-expired-recording',
      (id) =>
        apps.dataSource.query(
          `UPDATE workflow_runs SET carrier_recording_url = 'https://carrier.invalid/expired.wav', ended_at = now() - interval '2 hours',
                  answered_at = now() - interval '2 hours' WHERE id = $1`,
          [id],
        ),
      '2 hours',
    );
    const [run] = await runsWhenComplete(apps.dataSource, [runId]);
    expect(run.status).toBe('completed');
    expect(run.logs.events.map((event: { event: string }) => event.event)).toContain('artifacts.recording_unavailable');
    const stored = await apps.dataSource.getRepository(WorkflowRun).findOneByOrFail({ id: runId });
    expect(stored.transcriptKey).not.toBeNull();
  });

  it('leaves a run that moved after its round selected it: a new dial, whose age is not the one measured', async () => {
    const store = apps.dialer!.get(WorkflowRunStore);
    const read = store.findById.bind(store);
    let runId = 0;
    let moved = false;
    const reads = jest.spyOn(store, 'findById').mockImplementation(async (id: number) => {
      if (id === runId && !moved) {
        moved = true;
        // Between the round's selection and its read of the run: requeued and claimed again (another reaper's round, a dialer).
        await apps.dataSource.query(`UPDATE workflow_runs SET status_changed_at = now() WHERE id = $1`, [id]);
      }
      return read(id);
    });
    try {
      await strandedRun(apps.dataSource, seed, 'ringing', 'SB-moved-on', async (id) => (runId = id));
      await waitFor(async () => (moved ? true : undefined), { what: 'the reaper to read the run it selected' });
      // Three more rounds: the run is 600 ms into its new status, short of the 2-s limit.
      await new Promise((resolve) => setTimeout(resolve, 600));
      const [row] = await apps.dataSource.query(`SELECT status FROM workflow_runs WHERE id = $1`, [runId]);
      expect(row.status).toBe('ringing');
    } finally {
      reads.mockRestore();
    }
    // Its age now counts from the new status: it ends at the ring limit from there.
    const [run] = await runsWhenComplete(apps.dataSource, [runId]);
    expect(run).toMatchObject({ status: 'failed', end_reason: 'ring_timeout' });
  });

  it('waits before trying again a run whose reaping failed, instead of retrying it every round', async () => {
    // A carrier recording that cannot be fetched, 10 minutes after the call: every collection fails, short of giving up.
    const sandbox = apps.dialer!.get(TelephonyProviders).get('sandbox') as TelephonyProvider & CarrierWebhooks;
    const fetches = jest.spyOn(sandbox, 'fetchRecording');
    try {
      const runId = await strandedRun(apps.dataSource, seed, 'completed', 'SB-unfetchable', (id) =>
        apps.dataSource.query(
          `UPDATE workflow_runs SET carrier_recording_url = 'https://carrier.invalid/gone.wav', ended_at = now() - interval '10 minutes',
                  answered_at = now() - interval '10 minutes' WHERE id = $1`,
          [id],
        ),
      );
      const ofRun = () => fetches.mock.calls.filter(([url]) => url === 'https://carrier.invalid/gone.wav').length;
      await waitFor(async () => (ofRun() > 0 ? true : undefined), { what: 'the first collection' });
      // Ten reaper rounds (every 200 ms) later, still the one try: the next waits 30 s.
      await new Promise((resolve) => setTimeout(resolve, 2000));
      expect(ofRun()).toBe(1);
      const [row] = await apps.dataSource.query(`SELECT is_completed FROM workflow_runs WHERE id = $1`, [runId]);
      expect(row.is_completed).toBe(false);
    } finally {
      fetches.mockRestore();
    }
  });

  it('fails an answered call that outlives the maximum call duration', async () => {
    const runId = await strandedRun(apps.dataSource, seed, 'in_progress', 'SB-long-call');
    const [run] = await runsWhenComplete(apps.dataSource, [runId]);
    expect(run).toMatchObject({ status: 'failed', end_reason: 'max_duration_exceeded' });
  });

  it("judges an answered call by the limit its dial gave the carrier, not by its configuration's lowered since", async () => {
    // Answered 2 minutes ago under a one-hour limit; the configuration now says 10 s (+ 60 s of grace: 70 s).
    const limited = (seconds: number) => (id: number) =>
      apps.dataSource.query(`UPDATE workflow_runs SET max_call_duration_seconds = $2 WHERE id = $1`, [id, seconds]);
    const placedLong = await strandedRun(apps.dataSource, seed, 'in_progress', 'SB-placed-long', limited(3600), '2 minutes');
    // A call placed under a limit as short as the configuration's is ended as before.
    const placedShort = await strandedRun(apps.dataSource, seed, 'in_progress', 'SB-placed-short', limited(10), '2 minutes');
    const [short] = await runsWhenComplete(apps.dataSource, [placedShort]);
    expect(short).toMatchObject({ status: 'failed', end_reason: 'max_duration_exceeded' });
    // Rounds every 200 ms have passed the long call by since: still live.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const [live] = await apps.dataSource.query(`SELECT status, is_completed FROM workflow_runs WHERE id = $1`, [placedLong]);
    expect(live).toEqual({ status: 'in_progress', is_completed: false });
    // Past its own limit, it is ended too.
    await apps.dataSource.query(`UPDATE workflow_runs SET status_changed_at = now() - interval '2 hours' WHERE id = $1`, [placedLong]);
    const [long] = await runsWhenComplete(apps.dataSource, [placedLong]);
    expect(long).toMatchObject({ status: 'failed', end_reason: 'max_duration_exceeded' });
  });
});
