import { RunReader, TelephonyConfiguration, WorkflowRunStore } from '@app/persistence';
import { CarrierError, TelephonyProviders } from '@app/telephony';
import { getQueueToken } from '@nestjs/bullmq';
import { Queue } from 'bullmq';
import { ConcurrencyLimiter, placeCallJobId, QueueName, RedisClient } from '@app/queue';
import { PromptRenderer } from '@app/templating';
import { CallPlacer, DIAL_LATE_MS } from '../../apps/dialer/src/calls/call-placer.service';
import { PlaceCallProgress } from '../../apps/dialer/src/calls/place-decision';
import { DialAdmission } from '../../apps/dialer/src/pacing/dial-admission';
import { GroupedRunWrites } from '../../apps/dialer/src/runs/grouped-run-writes.service';
import { sandboxDialsByRun } from '../support/fixtures';
import { queuedSandboxRun } from '../support/queued-sandbox-run';
import { startTestAppsWithPausedWorkers, TestApps } from '../support/test-apps';

/** Long enough that a dialer that is not stopped claims and dials well within it, however busy the machine. */
const LEASE_MS = 2_000;

/**
 * A dialer stopped or blocked between sending its claim and its dial (a
 * paused VM, SIGSTOP) sends no dial once its claim is older than
 * DIAL_CLAIM_LEASE_MS: its job's lock may have lapsed meanwhile and the run
 * gone to another dialer. These drive the dialer's `CallPlacer` attempt by
 * attempt, with the workers paused, the way BullMQ would call it; the stop
 * is the claim's answer held back past the lease.
 */
describe('a dial job whose claim outlived its lease', () => {
  let apps: TestApps;

  beforeAll(async () => {
    apps = await startTestAppsWithPausedWorkers({ DIAL_CLAIM_LEASE_MS: String(LEASE_MS) });
  });
  afterAll(() => apps.close());

  const queuedRun = () => queuedSandboxRun(apps);

  /** Holds back the answer of the next claim of `runId` until `meanwhile` has run and the lease has passed. */
  async function placeStoppedAfterTheClaim(
    job: { runId: number; organizationId: number },
    meanwhile: () => Promise<void> = async () => undefined,
    progress: PlaceCallProgress = {},
    holdMs = LEASE_MS + 200,
  ) {
    const writes = apps.dialer!.get(GroupedRunWrites);
    const claim = writes.claim.bind(writes);
    const spy = jest.spyOn(writes, 'claim').mockImplementation(async (id, ...rest) => {
      const claimed = await claim(id, ...rest);
      if (id !== job.runId) return claimed;
      spy.mockRestore();
      const stoppedAt = Date.now();
      await meanwhile();
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, holdMs - (Date.now() - stoppedAt))));
      return claimed;
    });
    try {
      return await apps.dialer!.get(CallPlacer).place(job, progress);
    } finally {
      spy.mockRestore();
    }
  }

  const dialsOf = async (runId: number) => (await sandboxDialsByRun(apps.dataSource, [runId])).get(runId);
  const configurationIdOf = async (runId: number): Promise<number> =>
    (await apps.dataSource.query(`SELECT telephony_configuration_id AS id FROM workflow_runs WHERE id = $1`, [runId]))[0].id;
  /** The run as the other claim left it: dialed once by it, its call live (not ended, nor queued again), its slot held. */
  async function expectLeftToTheOtherClaim(runId: number, configurationId: number): Promise<void> {
    expect(await claimsOf(runId)).toHaveLength(2);
    expect(await dialsOf(runId)).toBe(1);
    const [run] = await apps.dataSource.query(`SELECT status, end_reason, provider_call_id FROM workflow_runs WHERE id = $1`, [runId]);
    expect(run).toEqual({ status: 'dialing', end_reason: null, provider_call_id: expect.any(String) });
    expect(await apps.dialer!.get(ConcurrencyLimiter).lease(configurationId, runId)).not.toBeNull();
  }
  const runOf = async (runId: number) =>
    (
      await apps.dataSource.query(
        `SELECT status, logs->'events'->-1->>'event' AS last_event, logs->'events'->-1->'detail'->>'claim' AS last_claim
           FROM workflow_runs WHERE id = $1`,
        [runId],
      )
    )[0];
  const claimsOf = async (runId: number): Promise<string[]> =>
    (
      await apps.dataSource.query(
        `SELECT entry->'detail'->>'claim' AS claim FROM workflow_runs, jsonb_array_elements(logs->'events') AS entry
          WHERE id = $1 AND entry->>'event' = 'dialer.dialing'`,
        [runId],
      )
    ).map((row: { claim: string }) => row.claim);

  it('sends no dial on the lapsed claim and hands the run back, and its job dials it once when it comes back', async () => {
    const job = await queuedRun();
    const placer = apps.dialer!.get(CallPlacer);

    const lapsed = await placeStoppedAfterTheClaim(job);

    expect(lapsed).toMatchObject({ kind: 'delay', reason: 'claim_lapsed', progress: {} });
    expect(lapsed.kind === 'delay' && lapsed.progress.unsettledClaim).toBeFalsy();
    expect(await dialsOf(job.runId)).toBe(0);
    const [claim] = await claimsOf(job.runId);
    expect(await runOf(job.runId)).toEqual({ status: 'queued', last_event: 'dialer.claim_lapsed', last_claim: claim });

    expect(await placer.place(job, lapsed.kind === 'delay' ? lapsed.progress : {})).toEqual({ kind: 'done', outcome: 'placed' });
    expect(await dialsOf(job.runId)).toBe(1);
  });

  it('waits twice as long after each lapse of the same job, up to a minute', async () => {
    const job = await queuedRun();
    /** The wait asked for, bounded below from before the claim's hold ended and above from the answer. */
    const waitOf = async (progress: PlaceCallProgress) => {
      const before = Date.now();
      const lapsed = await placeStoppedAfterTheClaim(job, undefined, progress);
      const after = Date.now();
      if (lapsed.kind !== 'delay' || lapsed.reason !== 'claim_lapsed') throw new Error(`not handed back: ${JSON.stringify(lapsed)}`);
      return { atLeast: lapsed.untilMs - before - (LEASE_MS + 200), atMost: lapsed.untilMs - after, progress: lapsed.progress };
    };
    const expectWait = (wait: { atLeast: number; atMost: number }, fromMs: number, toMs: number) => {
      expect(wait.atLeast).toBeGreaterThanOrEqual(fromMs);
      expect(wait.atMost).toBeLessThanOrEqual(toMs);
    };

    const first = await waitOf({});
    expect(first.progress.claimLapses).toBe(1);
    expectWait(first, 1_000, 2_000);
    const second = await waitOf(first.progress);
    expect(second.progress.claimLapses).toBe(2);
    expectWait(second, 2_000, 4_000);
    const many = await waitOf({ claimLapses: 12 });
    expect(many.progress.claimLapses).toBe(13);
    expectWait(many, 30_000, 60_000);

    // A hand-back the database fails is counted too: the job comes back for its claim, one lapse further on.
    const store = apps.dialer!.get(WorkflowRunStore);
    const transition = store.transition.bind(store);
    const failing = jest.spyOn(store, 'transition').mockImplementation(async (id, to, event, ...rest) => {
      if (id === job.runId && event === 'dialer.claim_lapsed') throw new Error('canceling statement due to statement timeout');
      return transition(id, to, event, ...rest);
    });
    try {
      const unsettled = await placeStoppedAfterTheClaim(job, undefined, many.progress);
      expect(unsettled).toMatchObject({ kind: 'delay', reason: 'claim_unsettled', progress: { claimLapses: 14 } });
      expect(unsettled.kind === 'delay' && unsettled.progress.unsettledClaim).toBeTruthy();
    } finally {
      failing.mockRestore();
    }
    expect(await dialsOf(job.runId)).toBe(0);
  });

  it('sends nothing, and leaves the run alone, when another dialer claimed it while this one was stopped', async () => {
    const job = await queuedRun();
    const placer = apps.dialer!.get(CallPlacer);

    // While this dialer is stopped its lock lapses: the reaper finds no call at the carrier and queues the run again,
    // and another dialer claims it, its dial not sent yet.
    const stopped = await placeStoppedAfterTheClaim(job, async () => {
      const guard = { withoutCallId: true };
      const requeued = await apps.dialer!.get(WorkflowRunStore).transition(job.runId, 'queued', 'reaper.requeued', {}, {}, ['dialing'], guard);
      expect(requeued).not.toBeNull();
      const other = await apps.dialer!.get(GroupedRunWrites).claim(job.runId, 'dialer.dialing', { fromNumber: '+15005550006' }, { claim: 'another-dialer' });
      expect(other).not.toBeNull();
    });

    expect(stopped).toEqual({ kind: 'done', outcome: 'skipped' });
    expect(await dialsOf(job.runId)).toBe(0);
    expect(await runOf(job.runId)).toEqual({ status: 'dialing', last_event: 'dialer.dialing', last_claim: 'another-dialer' });
    // The other dialer's dial goes out, once.
    expect(await placer.place(job, { unsettledClaim: 'another-dialer' })).toEqual({ kind: 'done', outcome: 'placed' });
    expect(await dialsOf(job.runId)).toBe(1);
  });

  it('gives the run a job again when a copy of its job ended meanwhile, finding the run claimed', async () => {
    const job = await queuedRun();
    const placer = apps.dialer!.get(CallPlacer);
    const calls = apps.dialer!.get<Queue>(getQueueToken(QueueName.Calls));
    const jobId = placeCallJobId(job.runId);

    // The stalled copy of the job, run by another dialer while this one is stopped, finds the run claimed and ends.
    const stopped = await placeStoppedAfterTheClaim(job, async () => {
      expect(await placer.place(job, {})).toEqual({ kind: 'done', outcome: 'skipped' });
      const queued = await calls.getJob(jobId);
      expect(queued).toBeDefined();
      await queued!.remove();
      expect(await calls.getJob(jobId)).toBeUndefined();
    });

    expect(stopped).toMatchObject({ kind: 'delay', reason: 'claim_lapsed' });
    expect((await runOf(job.runId)).status).toBe('queued');
    // Added again: the job was gone when the stalled copy ended.
    expect(await calls.getJob(jobId)).toBeDefined();
    expect(await dialsOf(job.runId)).toBe(0);
  });

  it('gives the run a job again when the carrier refused its dial unprocessed after a copy of its job ended meanwhile', async () => {
    const job = await queuedRun();
    const placer = apps.dialer!.get(CallPlacer);
    const calls = apps.dialer!.get<Queue>(getQueueToken(QueueName.Calls));
    const jobId = placeCallJobId(job.runId);
    const sandbox = apps.dialer!.get(TelephonyProviders).get('sandbox');
    const dial = jest.spyOn(sandbox, 'placeCall').mockImplementationOnce(async () => {
      // Stopped while its dial was on the way, past its job's lock: the stalled copy, run by another dialer, finds the
      // run claimed and ends. Then the carrier's answer: busy, nothing done.
      expect(await placer.place(job, {})).toEqual({ kind: 'done', outcome: 'skipped' });
      await (await calls.getJob(jobId))!.remove();
      throw new CarrierError('Busy, try again', { reason: 'carrier_busy', permanent: false, notProcessed: true });
    });
    let refused;
    try {
      refused = await placer.place(job, {});
    } finally {
      dial.mockRestore();
    }

    expect(refused).toMatchObject({ kind: 'delay', reason: 'carrier_busy' });
    expect((await runOf(job.runId)).status).toBe('queued');
    // Added again: the job was gone when the copy ended, and this one's delay would hold no job.
    expect(await calls.getJob(jobId)).toBeDefined();
    expect(await dialsOf(job.runId)).toBe(0);
  });

  it("leaves the run's slot to a copy of its job that renewed it while this one was stopped", async () => {
    const job = await queuedRun();
    const configurationId = await configurationIdOf(job.runId);
    const slots = apps.dialer!.get(ConcurrencyLimiter);
    let renewed: string | null = null;

    // The stalled copy of the job, run by another dialer while this one is stopped, is admitted: the slot is its now.
    const stopped = await placeStoppedAfterTheClaim(job, async () => {
      const before = await slots.lease(configurationId, job.runId);
      const limits = { callsPerSecond: 10, maxConcurrentCalls: 10, leaseMs: 600_000 };
      const admitted = await apps.dialer!.get(DialAdmission).admit(configurationId, job.runId, limits, false);
      expect(admitted).toMatchObject({ kind: 'admitted' });
      renewed = admitted.kind === 'admitted' ? admitted.lease : null;
      expect(renewed).not.toBe(before);
    });

    expect(stopped).toMatchObject({ kind: 'delay', reason: 'claim_lapsed' });
    expect((await runOf(job.runId)).status).toBe('queued');
    expect(await slots.lease(configurationId, job.runId)).toBe(renewed);
  });

  it('frees the slot of a run it found claimed, and back in the queue since, only as its own admission left it', async () => {
    const job = await queuedRun();
    const configurationId = await configurationIdOf(job.runId);
    const slots = apps.dialer!.get(ConcurrencyLimiter);
    const writes = apps.dialer!.get(GroupedRunWrites);
    const claim = writes.claim.bind(writes);
    // A copy of the job, on another dialer, claims the run first.
    const claimSpy = jest.spyOn(writes, 'claim').mockImplementationOnce(async (id, ...rest) => {
      expect(await claim(id, 'dialer.dialing', { fromNumber: '+15005550006' }, { claim: 'a-copy' })).not.toBeNull();
      return claim(id, ...rest);
    });
    const reader = apps.dialer!.get(RunReader);
    const read = reader.findById.bind(reader);
    let reads = 0;
    let renewed: string | null = null;
    // Then, while this job reads what became of the run, the copy hands it back (its dial held back too late) and is
    // admitted again at once, for a dial of its own: the slot is the copy's now.
    const readSpy = jest.spyOn(reader, 'findById').mockImplementation(async (id) => {
      if (id === job.runId && ++reads === 2) {
        await apps.dataSource.query(`UPDATE workflow_runs SET status = 'queued' WHERE id = $1`, [job.runId]);
        const limits = { callsPerSecond: 10, maxConcurrentCalls: 10, leaseMs: 600_000 };
        const admitted = await apps.dialer!.get(DialAdmission).admit(configurationId, job.runId, limits, false);
        renewed = admitted.kind === 'admitted' ? admitted.lease : null;
      }
      return read(id);
    });
    try {
      expect(await apps.dialer!.get(CallPlacer).place(job)).toEqual({ kind: 'done', outcome: 'skipped' });
    } finally {
      claimSpy.mockRestore();
      readSpy.mockRestore();
    }
    expect(reads).toBe(2);
    expect(renewed).not.toBeNull();
    expect(await slots.lease(configurationId, job.runId)).toBe(renewed);
    expect(await dialsOf(job.runId)).toBe(0);
  });

  it.each([
    ['rejects it for good', () => new CarrierError('Number blocked', { reason: 'carrier_rejected', permanent: true, notProcessed: false })],
    ['refuses it unprocessed', () => new CarrierError('Busy, try again', { reason: 'carrier_busy', permanent: false, notProcessed: true })],
  ])('leaves alone the run another claim has dialed since, when the carrier, answering a dialer stopped past the reaper, %s', async (_case, refusal) => {
    const job = await queuedRun();
    const configurationId = await configurationIdOf(job.runId);
    const placer = apps.dialer!.get(CallPlacer);
    const sandbox = apps.dialer!.get(TelephonyProviders).get('sandbox');
    const dial = jest.spyOn(sandbox, 'placeCall').mockImplementationOnce(async () => {
      // Stopped while its dial was sent, past its job's lock: the reaper found no call and handed the run back, and
      // another dialer claimed and dialed it (the call events' workers are paused: its run stays `dialing`).
      await apps.dataSource.query(`UPDATE workflow_runs SET status = 'queued' WHERE id = $1`, [job.runId]);
      expect(await placer.place(job)).toEqual({ kind: 'done', outcome: 'placed' });
      throw refusal();
    });
    try {
      // Not this job's run any more: nothing to do.
      expect(await placer.place(job)).toEqual({ kind: 'done', outcome: 'skipped' });
    } finally {
      dial.mockRestore();
    }

    await expectLeftToTheOtherClaim(job.runId, configurationId);
  });

  it("leaves alone the run another claim has dialed since, when its prompt fails to render on a dialer stopped past the reaper", async () => {
    const job = await queuedRun();
    const configurationId = await configurationIdOf(job.runId);
    const placer = apps.dialer!.get(CallPlacer);
    const renderer = apps.dialer!.get(PromptRenderer);
    const render = jest.spyOn(renderer, 'render').mockImplementationOnce(async () => {
      // Stopped while rendering, past its job's lock: the reaper handed the run back, and another dialer claimed and
      // dialed it (its definition rendered there); this render then fails (a definition published meanwhile, say).
      render.mockRestore();
      await apps.dataSource.query(`UPDATE workflow_runs SET status = 'queued' WHERE id = $1`, [job.runId]);
      expect(await placer.place(job)).toEqual({ kind: 'done', outcome: 'placed' });
      throw new Error('Liquid syntax error');
    });
    try {
      expect(await placer.place(job)).toEqual({ kind: 'done', outcome: 'skipped' });
    } finally {
      render.mockRestore();
    }

    await expectLeftToTheOtherClaim(job.runId, configurationId);
  });

  describe('held back past DIAL_LATE_MS, within the lease', () => {
    const late = DIAL_LATE_MS + 300;
    const configurationOf = async (runId: number): Promise<TelephonyConfiguration> =>
      (await apps.dataSource.getRepository(TelephonyConfiguration).findOneBy({ id: await configurationIdOf(runId) }))!;
    const loggedLate = async (runId: number) =>
      (
        await apps.dataSource.query(
          `SELECT count(*)::int AS n FROM workflow_runs, jsonb_array_elements(logs->'events') AS entry WHERE id = $1 AND entry->>'event' = 'dialer.dial_late'`,
          [runId],
        )
      )[0].n;

    it('goes out when the rate window has room for it now', async () => {
      const job = await queuedRun();
      expect(await placeStoppedAfterTheClaim(job, undefined, {}, late)).toEqual({ kind: 'done', outcome: 'placed' });
      expect(await dialsOf(job.runId)).toBe(1);
      expect(await loggedLate(job.runId)).toBe(0);
    });

    it('is paced again, not sent, when the window filled meanwhile, and its job dials it once when it comes back', async () => {
      const job = await queuedRun();
      const config = await configurationOf(job.runId);
      const limits = { callsPerSecond: config.callsPerSecond, maxConcurrentCalls: 1_000, leaseMs: 60_000 };
      // Dials of other runs admitted while this one was held: the configuration's whole second.
      const held = await placeStoppedAfterTheClaim(
        job,
        async () => {
          // Once this dial's own place in the window has passed, within the second before it is admitted again.
          await new Promise((resolve) => setTimeout(resolve, DIAL_LATE_MS));
          const others = Array.from({ length: Math.ceil(config.callsPerSecond) }, (_, index) => 900_000_001 + index);
          const admitted = await Promise.all(others.map((other) => apps.dialer!.get(DialAdmission).admit(config.id, other, limits, false)));
          expect(admitted.every((admission) => admission.kind === 'admitted')).toBe(true);
        },
        {},
        late,
      );

      expect(held).toMatchObject({ kind: 'delay', reason: 'dial_late', progress: { lateDials: 1 } });
      expect(await dialsOf(job.runId)).toBe(0);
      expect(await runOf(job.runId)).toMatchObject({ status: 'queued', last_event: 'dialer.dial_late' });
      const slots = apps.dialer!.get(ConcurrencyLimiter);
      expect(await slots.lease(config.id, job.runId)).toBeNull();
      // The other dials end, and the window moves on.
      for (let other = 1; other <= Math.ceil(config.callsPerSecond); other++) await slots.release(config.id, 900_000_000 + other);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(await apps.dialer!.get(CallPlacer).place(job, held.kind === 'delay' ? held.progress : {})).toEqual({ kind: 'done', outcome: 'placed' });
      expect(await dialsOf(job.runId)).toBe(1);
    });

    it('is paced again when the dialer stalled after Redis admitted it, before it read the answer, and the window filled meanwhile', async () => {
      const job = await queuedRun();
      const config = await configurationOf(job.runId);
      const limits = { callsPerSecond: config.callsPerSecond, maxConcurrentCalls: 1_000, leaseMs: 60_000 };
      const admission = apps.dialer!.get(DialAdmission);
      const admit = admission.admit.bind(admission);
      const others = Array.from({ length: Math.ceil(config.callsPerSecond) }, (_, index) => 900_100_001 + index);
      // The first admission of this run is answered by Redis, then read late (a blocked event loop, a paused VM):
      // meanwhile other dialers fill the configuration's next second. Measured from the answer's reading, this dial
      // would not look late, and would go out on top of them.
      const spy = jest.spyOn(admission, 'admit').mockImplementation(async (...args) => {
        const answer = await admit(...args);
        if (args[1] === job.runId && spy.mock.calls.filter((call) => call[1] === job.runId).length === 1) {
          await new Promise((resolve) => setTimeout(resolve, DIAL_LATE_MS));
          const filled = await Promise.all(others.map((other) => admit(config.id, other, limits, false)));
          expect(filled.every((other) => other.kind === 'admitted')).toBe(true);
          await new Promise((resolve) => setTimeout(resolve, late - DIAL_LATE_MS));
        }
        return answer;
      });
      let held;
      try {
        held = await apps.dialer!.get(CallPlacer).place(job, {});
      } finally {
        spy.mockRestore();
      }

      expect(held).toMatchObject({ kind: 'delay', reason: 'dial_late', progress: { lateDials: 1 } });
      expect(await dialsOf(job.runId)).toBe(0);
      expect(await runOf(job.runId)).toMatchObject({ status: 'queued', last_event: 'dialer.dial_late' });
      const slots = apps.dialer!.get(ConcurrencyLimiter);
      for (const other of others) await slots.release(config.id, other);
    });

    it('goes out, counted once in the window, when its admission waited for Redis (away) past DIAL_LATE_MS', async () => {
      const job = await queuedRun();
      const config = await configurationOf(job.runId);
      // One call a second: a dial admitted again would find its own first place filling the window.
      await apps.dataSource.query(`UPDATE telephony_configurations SET calls_per_second = 1 WHERE id = $1`, [config.id]);
      const admission = apps.dialer!.get(DialAdmission);
      const admit = admission.admit.bind(admission);
      // Its first ask held by the connection while Redis is away: Redis admits it, fresh, when it is back.
      let held = false;
      const spy = jest.spyOn(admission, 'admit').mockImplementation(async (...args) => {
        if (args[1] === job.runId && !held) {
          held = true;
          await new Promise((resolve) => setTimeout(resolve, late));
        }
        return admit(...args);
      });
      let placed;
      try {
        placed = await apps.dialer!.get(CallPlacer).place(job, {});
      } finally {
        spy.mockRestore();
      }

      expect(placed).toEqual({ kind: 'done', outcome: 'placed' });
      expect(await dialsOf(job.runId)).toBe(1);
      expect(await loggedLate(job.runId)).toBe(0);
      expect(await apps.dialer!.get(RedisClient).redis.zcard(apps.dialer!.get(RedisClient).keyFor('dials', config.id))).toBe(1);
    });

    it('sends nothing when admitting it again took it past the lease, and hands the run back as a lapsed claim', async () => {
      const job = await queuedRun();
      const admission = apps.dialer!.get(DialAdmission);
      const admit = admission.admit.bind(admission);
      // Redis away while the late dial is admitted again: its answer comes past the claim's lease.
      const spy = jest.spyOn(admission, 'admit').mockImplementation(async (...args) => {
        const answer = await admit(...args);
        if (args[1] === job.runId && spy.mock.calls.length > 1) await new Promise((resolve) => setTimeout(resolve, LEASE_MS));
        return answer;
      });
      let held;
      try {
        held = await placeStoppedAfterTheClaim(job, undefined, {}, late);
      } finally {
        spy.mockRestore();
      }

      expect(held).toMatchObject({ kind: 'delay', reason: 'claim_lapsed' });
      expect(await dialsOf(job.runId)).toBe(0);
      expect(await runOf(job.runId)).toMatchObject({ status: 'queued', last_event: 'dialer.claim_lapsed' });
      // The slot the admission renewed is freed with the claim.
      expect(await apps.dialer!.get(ConcurrencyLimiter).lease((await configurationOf(job.runId)).id, job.runId)).toBeNull();
    });
  });
});
