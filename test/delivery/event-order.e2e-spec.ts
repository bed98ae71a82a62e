import { WorkflowRunStore } from '@app/persistence';
import { getQueueToken } from '@nestjs/bullmq';
import { Queue } from 'bullmq';
import { CallEventJob, JobName, QueueName } from '@app/queue';
import { APP_CONFIG, AppConfig } from '@app/config';
import { ANSWER_QUEUED_RECHECK_MS, CallEventApplier, EventTooEarly } from '../../apps/dialer/src/call-events/call-event-applier.service';
import { GroupedRunWrites } from '../../apps/dialer/src/runs/grouped-run-writes.service';
import { agentGraph, createOrganization, seedSandboxConfiguration, seedWorkflow } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

/**
 * Carrier events of one call travel in jobs of their own, which the dialer
 * runs side by side: an answer can be applied after the hang-up that
 * followed it. The run must end the same either way.
 */
describe('carrier events applied out of order', () => {
  let apps: TestApps;
  let applier: CallEventApplier;
  let seedRun: (status: string) => Promise<number>;
  let events: (runId: number, type: CallEventJob['type'], at: Date, extra?: Partial<CallEventJob>) => CallEventJob;

  beforeAll(async () => {
    apps = await startTestApps();
    applier = apps.dialer!.get(CallEventApplier);
    const org = await createOrganization(apps.dataSource);
    const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 20, talk_ms: 50 } });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
    let next = 0;
    seedRun = async (status) => {
      next += 1;
      const [{ id }] = await apps.dataSource.query(
        `INSERT INTO workflow_runs (organization_id, workflow_id, name, status, environment, trigger_uuid, telephony_configuration_id,
                                    provider, phone_number, provider_call_id)
         VALUES ($1, $2, $3, $4, 'production', $5, $6, 'sandbox', '+14155550100', $3)
         RETURNING id`,
        [org.organizationId, workflow.workflowId, `SB-order-${next}`, status, workflow.triggerUuid, config.id],
      );
      return id;
    };
    events = (runId, type, at, extra = {}) => ({
      runId,
      organizationId: org.organizationId,
      provider: 'sandbox',
      providerCallId: `SB-order-${runId}`,
      type,
      occurredAt: at.toISOString(),
      ...extra,
    });
  });
  afterAll(() => apps.close());

  const readRow = async (runId: number) =>
    (await apps.dataSource.query(`SELECT status, answered_at, ended_at, duration_seconds FROM workflow_runs WHERE id = $1`, [runId]))[0];

  it('keeps the answer time of an answer applied after the hang-up, and the duration it gives', async () => {
    const runId = await seedRun('ringing');
    // One clock read: two could straddle a millisecond and make the duration 7.001 s.
    const now = Date.now();
    const answeredAt = new Date(now - 9_000);
    const endedAt = new Date(now - 2_000);
    // The carrier said nothing of the duration: it is the time from answer to hang-up.
    expect(await applier.apply(events(runId, 'completed', endedAt))).toBe(true);
    expect(await readRow(runId)).toMatchObject({ status: 'completed', answered_at: null, duration_seconds: null });

    expect(await applier.apply(events(runId, 'answered', answeredAt))).toBe(false);
    const row = await readRow(runId);
    expect(row).toMatchObject({ status: 'completed', answered_at: answeredAt, ended_at: endedAt });
    expect(row.duration_seconds).toBeCloseTo(7, 3);
  });

  it('leaves a carrier duration, and an answer time it already has, as they are', async () => {
    const runId = await seedRun('ringing');
    const endedAt = new Date(Date.now() - 1_000);
    await applier.apply(events(runId, 'completed', endedAt, { durationSeconds: 4 }));
    await applier.apply(events(runId, 'answered', new Date(endedAt.getTime() - 6_000)));
    expect(await readRow(runId)).toMatchObject({ status: 'completed', duration_seconds: 4 });

    const answeredAt = new Date(endedAt.getTime() - 6_000);
    const second = await seedRun('ringing');
    await applier.apply(events(second, 'answered', answeredAt));
    await applier.apply(events(second, 'completed', endedAt));
    // A repeat of the answer, later, changes nothing.
    await applier.apply(events(second, 'answered', new Date(endedAt.getTime() - 1_000)));
    expect(await readRow(second)).toMatchObject({ status: 'completed', answered_at: answeredAt });
  });

  it('waits for the hang-up before a price that came alone, but stores it on the last attempt if the hang-up never comes', async () => {
    const runId = await seedRun('in_progress');
    const price = events(runId, 'cost', new Date(), { cost: { amount: 0.02, currency: 'USD' }, billedSeconds: 60 });
    await expect(applier.apply(price)).rejects.toBeInstanceOf(EventTooEarly);
    expect((await apps.dataSource.query(`SELECT cost_info FROM workflow_runs WHERE id = $1`, [runId]))[0].cost_info).toEqual({});

    expect(await applier.apply(price, true)).toBe(false);
    const [row] = await apps.dataSource.query(`SELECT status, cost_info, logs FROM workflow_runs WHERE id = $1`, [runId]);
    expect(row).toMatchObject({ status: 'in_progress', cost_info: { total_cost: 0.02, currency: 'USD', billed_duration_seconds: 60 } });
    expect(row.logs.events.map((entry: { event: string }) => entry.event)).toContain('carrier.cost_before_hangup');
  });

  it('takes no answer time later than the hang-up, nor one for a call that ended unanswered', async () => {
    const runId = await seedRun('ringing');
    const endedAt = new Date(Date.now() - 3_000);
    await applier.apply(events(runId, 'completed', endedAt));
    await applier.apply(events(runId, 'answered', new Date(endedAt.getTime() + 500)));
    expect(await readRow(runId)).toMatchObject({ status: 'completed', answered_at: null });

    const busy = await seedRun('ringing');
    await applier.apply(events(busy, 'busy', endedAt));
    await applier.apply(events(busy, 'answered', new Date(endedAt.getTime() - 500)));
    expect(await readRow(busy)).toMatchObject({ status: 'busy', answered_at: null });
  });

  it('stores no call id from an event that names none, alone or with others, so the real one is still taken', async () => {
    for (const grouped of [false, true]) {
      const runId = await seedRun('dialing');
      await apps.dataSource.query(`UPDATE workflow_runs SET provider_call_id = NULL WHERE id = $1`, [runId]);
      const now = Date.now();
      // An event of the run's call that came before the dial's answer and named no call (the gateway sends '').
      const ringing = events(runId, 'ringing', new Date(now - 2_000), { providerCallId: '' });
      const answered = events(runId, 'answered', new Date(now - 1_000), { providerCallId: '' });
      // Alone, or with the next in one job moved as one (the grouped transition's statement).
      expect(await applier.applyJob(grouped ? { ...ringing, following: [answered], nothingBetween: true } : ringing)).toBe(true);
      const [row] = await apps.dataSource.query(`SELECT status, provider_call_id FROM workflow_runs WHERE id = $1`, [runId]);
      expect({ grouped, row }).toEqual({ grouped, row: { status: grouped ? 'in_progress' : 'ringing', provider_call_id: null } });
      await apps.dialer!.get(WorkflowRunStore).recordProviderCallId(runId, `SB-real-${runId}`);
      expect((await apps.dataSource.query(`SELECT provider_call_id FROM workflow_runs WHERE id = $1`, [runId]))[0].provider_call_id).toBe(`SB-real-${runId}`);
    }
  });

  describe("an answering-machine verdict applied before the answer's own event", () => {
    const readCost = async (runId: number) => (await apps.dataSource.query(`SELECT cost_info FROM workflow_runs WHERE id = $1`, [runId]))[0].cost_info;
    const verdict = (runId: number, at: Date) => events(runId, 'answered', at, { answeredBy: 'human', answerTimeEstimated: true });

    it("takes the answer's own time over the verdict's, on a run still talking", async () => {
      const runId = await seedRun('ringing');
      const now = Date.now();
      const answeredAt = new Date(now - 9_000);
      const verdictAt = new Date(now - 5_000);
      // The verdict moves the run: its time is the best there is until the answer comes.
      expect(await applier.apply(verdict(runId, verdictAt))).toBe(true);
      expect(await readRow(runId)).toMatchObject({ status: 'in_progress', answered_at: verdictAt });

      expect(await applier.apply(events(runId, 'answered', answeredAt))).toBe(false);
      expect(await readRow(runId)).toMatchObject({ status: 'in_progress', answered_at: answeredAt });
      // A repeat of the verdict, or a look-up's estimate, changes it no more.
      await applier.apply(verdict(runId, verdictAt));
      await applier.apply(events(runId, 'answered', new Date(now - 12_000), { answerTimeEstimated: true }));
      expect(await readRow(runId)).toMatchObject({ answered_at: answeredAt });

      await applier.apply(events(runId, 'completed', new Date(now - 1_000)));
      const row = await readRow(runId);
      expect(row).toMatchObject({ status: 'completed', answered_at: answeredAt });
      expect(row.duration_seconds).toBeCloseTo(8, 3);
    });

    it("takes the answer's own time over a look-up's earlier estimate (the call's start, ring time included)", async () => {
      const runId = await seedRun('ringing');
      const now = Date.now();
      const startedAt = new Date(now - 25_000);
      const answeredAt = new Date(now - 5_000);
      // The reaper's look-up, while the call's own events wait in a backlog: answered, at the call's start.
      expect(await applier.apply(events(runId, 'answered', startedAt, { answerTimeEstimated: true }))).toBe(true);
      expect(await readRow(runId)).toMatchObject({ status: 'in_progress', answered_at: startedAt });

      expect(await applier.apply(events(runId, 'answered', answeredAt))).toBe(false);
      expect(await readRow(runId)).toMatchObject({ status: 'in_progress', answered_at: answeredAt });
      // Another estimate changes it no more, nor does a later report of the answer (Plivo dates a machine verdict, or
      // a callback delivered again, when it arrives).
      await applier.apply(events(runId, 'answered', startedAt, { answerTimeEstimated: true }));
      await applier.apply(events(runId, 'answered', new Date(now - 2_000)));
      expect(await readRow(runId)).toMatchObject({ answered_at: answeredAt });

      await applier.apply(events(runId, 'completed', new Date(now - 1_000)));
      const row = await readRow(runId);
      expect(row).toMatchObject({ status: 'completed', answered_at: answeredAt });
      expect(row.duration_seconds).toBeCloseTo(4, 3);
    });

    it('computes a duration from the verdict again once the answer comes after the hang-up; a carrier duration stays', async () => {
      const runId = await seedRun('ringing');
      const now = Date.now();
      const endedAt = new Date(now - 1_000);
      await applier.apply(verdict(runId, new Date(now - 5_000)));
      await applier.apply(events(runId, 'completed', endedAt));
      expect((await readRow(runId)).duration_seconds).toBeCloseTo(4, 3);

      expect(await applier.apply(events(runId, 'answered', new Date(now - 9_000)))).toBe(false);
      const row = await readRow(runId);
      expect(row).toMatchObject({ status: 'completed', answered_at: new Date(now - 9_000) });
      expect(row.duration_seconds).toBeCloseTo(8, 3);
      expect((await readCost(runId)).call_duration_seconds).toBeCloseTo(8, 3);

      // A duration the carrier reported is the one billed: a better answer time does not replace it.
      const billed = await seedRun('ringing');
      await applier.apply(verdict(billed, new Date(now - 5_000)));
      await applier.apply(events(billed, 'completed', endedAt, { durationSeconds: 7 }));
      await applier.apply(events(billed, 'answered', new Date(now - 9_000)));
      expect(await readRow(billed)).toMatchObject({ answered_at: new Date(now - 9_000), duration_seconds: 7 });
      expect(await readCost(billed)).toMatchObject({ call_duration_seconds: 7 });
    });
  });

  describe('a failure that may follow an answer', () => {
    let lateAnswerWaitMs: number;
    beforeAll(() => {
      lateAnswerWaitMs = apps.dialer!.get<AppConfig>(APP_CONFIG).lateAnswerWaitMs;
    });
    const logged = async (runId: number) =>
      ((await apps.dataSource.query(`SELECT logs FROM workflow_runs WHERE id = $1`, [runId]))[0].logs.events as { event: string }[]).map(
        (entry) => entry.event,
      );

    it('ends a run answered between its answer check and its move as an answered call, not failed', async () => {
      const runId = await seedRun('ringing');
      const writes = apps.dialer!.get(GroupedRunWrites);
      const transition = writes.transition.bind(writes);
      // The answer's job runs beside the failure's: it lands after the failure found the run unanswered.
      const spy = jest.spyOn(writes, 'transition').mockImplementation(async (...args) => {
        if (args[0] === runId && args[1] === 'failed') {
          spy.mockRestore();
          expect(await applier.apply(events(runId, 'answered', new Date(Date.now() - 5_000)))).toBe(true);
        }
        return transition(...args);
      });

      try {
        expect(await applier.apply(events(runId, 'failed', new Date(), { reason: 'unspecified' }))).toBe(true);
      } finally {
        spy.mockRestore();
      }

      expect(await readRow(runId)).toMatchObject({ status: 'completed' });
      expect(await logged(runId)).toEqual(expect.arrayContaining(['carrier.answered', 'carrier.hangup_after_answer']));
      expect(await logged(runId)).not.toContain('carrier.failed');
    });

    it('waits for an answer applied late when the cause does not tell, and ends the call completed once it comes', async () => {
      const runId = await seedRun('ringing');
      const failure = events(runId, 'failed', new Date(), { reason: 'unspecified', answerUnknown: true });
      const receivedAt = Date.now();
      const early = applier.apply(failure, false, receivedAt);
      // Delayed (no attempt spent) until LATE_ANSWER_WAIT_MS after it reached us, whatever the carrier's clock says.
      await expect(early).rejects.toBeInstanceOf(EventTooEarly);
      await expect(early).rejects.toMatchObject({ untilMs: receivedAt + lateAnswerWaitMs });
      expect(await readRow(runId)).toMatchObject({ status: 'ringing' });

      await applier.apply(events(runId, 'answered', new Date(Date.now() - 8_000)));
      expect(await applier.apply(failure, false, receivedAt)).toBe(true);
      expect(await readRow(runId)).toMatchObject({ status: 'completed' });
      expect(await logged(runId)).toContain('carrier.hangup_after_answer');
    });

    it.each(['answered', 'answered-amd'])(
      'past the wait, holds the failure while a job with the run\'s answer (%s) is still queued, and ends the call completed once it is applied',
      async (answerJob) => {
        const runId = await seedRun('ringing');
        const queue = apps.dialer!.get<Queue<CallEventJob>>(getQueueToken(QueueName.CallEvents));
        // The queue is behind: the failure reached us past its wait ago, and the answer that came after it waits its turn.
        const answer = events(runId, 'answered', new Date(Date.now() - 8_000), answerJob === 'answered-amd' ? { answeredBy: 'human' } : {});
        await queue.add(JobName.CallEvent, answer, { jobId: `run-${runId}-${answerJob}`, delay: 60_000 });
        const failure = events(runId, 'failed', new Date(), { reason: 'unspecified', answerUnknown: true });
        const longAgo = Date.now() - lateAnswerWaitMs - 30_000;

        const before = Date.now();
        const held = await applier.apply(failure, false, longAgo).catch((error: unknown) => error);
        expect(held).toBeInstanceOf(EventTooEarly);
        expect((held as EventTooEarly).untilMs).toBeGreaterThanOrEqual(before + ANSWER_QUEUED_RECHECK_MS);
        expect((held as EventTooEarly).untilMs).toBeLessThanOrEqual(Date.now() + ANSWER_QUEUED_RECHECK_MS);
        expect(await readRow(runId)).toMatchObject({ status: 'ringing' });

        // Its job's turn comes, and the dialer applies it: the failure, back again, ends the answered call.
        const queued = (await queue.getJob(`run-${runId}-${answerJob}`))!;
        await queued.promote();
        await waitFor(async () => ((await queue.getJobState(queued.id!)) === 'completed' ? true : undefined), { what: 'the answer to be applied' });
        expect(await readRow(runId)).toMatchObject({ status: 'in_progress' });
        expect(await applier.apply(failure, false, longAgo)).toBe(true);
        expect(await readRow(runId)).toMatchObject({ status: 'completed' });
        expect(await logged(runId)).toContain('carrier.hangup_after_answer');
      },
    );

    it('fails the run once the wait is over, on the last attempt, or when the cause tells the call was not answered', async () => {
      const waited = await seedRun('ringing');
      const longAgo = Date.now() - lateAnswerWaitMs - 1_000;
      expect(await applier.apply(events(waited, 'failed', new Date(), { reason: 'unspecified', answerUnknown: true }), false, longAgo)).toBe(true);
      expect(await readRow(waited)).toMatchObject({ status: 'failed' });

      const last = await seedRun('dialing');
      expect(await applier.apply(events(last, 'failed', new Date(), { reason: 'unspecified', answerUnknown: true }), true)).toBe(true);
      expect(await readRow(last)).toMatchObject({ status: 'failed' });

      // A gateway whose clock is ahead of the dialer's by more than the wait: not waited for (it would hold the run).
      const skewed = await seedRun('ringing');
      const farAhead = Date.now() + 3 * lateAnswerWaitMs;
      expect(await applier.apply(events(skewed, 'failed', new Date(), { reason: 'unspecified', answerUnknown: true }), false, farAhead)).toBe(true);
      expect(await readRow(skewed)).toMatchObject({ status: 'failed' });
      // Ahead by less: waited for, but never delayed by more than the wait at once.
      const ahead = await seedRun('ringing');
      const before = Date.now();
      const delayed = applier.apply(events(ahead, 'failed', new Date(), { reason: 'unspecified', answerUnknown: true }), false, before + lateAnswerWaitMs / 2);
      await expect(delayed).rejects.toBeInstanceOf(EventTooEarly);
      const { untilMs } = (await delayed.catch((error: EventTooEarly) => error)) as EventTooEarly;
      expect(untilMs! - before).toBeLessThanOrEqual(lateAnswerWaitMs + (Date.now() - before));
      expect(untilMs! - before).toBeGreaterThanOrEqual(lateAnswerWaitMs);

      const rejected = await seedRun('ringing');
      expect(await applier.apply(events(rejected, 'failed', new Date(), { reason: 'call_rejected' }))).toBe(true);
      expect(await readRow(rejected)).toMatchObject({ status: 'failed' });
    });
  });

  describe('events reported together', () => {
    const logOf = async (runId: number) =>
      ((await apps.dataSource.query(`SELECT logs FROM workflow_runs WHERE id = $1`, [runId]))[0].logs.events as Array<{ event: string; status?: string }>)
        .filter((entry) => entry.event.startsWith('carrier.'))
        .map(({ event, status }) => `${event} ${status}`);
    const together = (runId: number, at: Date, extra: Partial<CallEventJob> = {}): CallEventJob => ({
      ...events(runId, 'ringing', at),
      following: [events(runId, 'answered', at), events(runId, 'completed', at, { durationSeconds: 0 })],
      ...extra,
    });
    /** Applies a job and answers how many grouped status statements named its run. */
    const statementsFor = async (runId: number, job: CallEventJob): Promise<{ moved: boolean; statements: number }> => {
      const spy = jest.spyOn(apps.dialer!.get(WorkflowRunStore), 'transitionMany');
      try {
        const moved = await applier.applyJob(job);
        const statements = spy.mock.calls.filter(([, , moves]) => moves.some((move) => move.runId === runId)).length;
        return { moved, statements };
      } finally {
        spy.mockRestore();
      }
    };
    const fullLog = ['carrier.ringing ringing', 'carrier.answered in_progress', 'carrier.completed completed'];

    it('moves a dialing run once, past ringing and answered, when the carrier has nothing to do between them', async () => {
      const runId = await seedRun('dialing');
      const at = new Date(Date.now() - 500);
      expect(await statementsFor(runId, together(runId, at, { nothingBetween: true }))).toEqual({ moved: true, statements: 1 });
      const [row] = await apps.dataSource.query(
        `SELECT status, is_completed, answered_at, ended_at, end_reason, duration_seconds FROM workflow_runs WHERE id = $1`,
        [runId],
      );
      expect(row).toMatchObject({ status: 'completed', is_completed: true, answered_at: at, ended_at: at, end_reason: 'completed', duration_seconds: 0 });
      expect(await logOf(runId)).toEqual(fullLog);
    });

    it('leaves a run as applying the events one by one does, in one statement each', async () => {
      const one = await seedRun('dialing');
      const other = await seedRun('dialing');
      const at = new Date(Date.now() - 500);
      expect(await statementsFor(one, together(one, at))).toEqual({ moved: true, statements: 3 });
      await statementsFor(other, together(other, at, { nothingBetween: true }));
      const columns = `status, is_completed, answered_at, ended_at, end_reason, duration_seconds, cost_info`;
      const [a] = await apps.dataSource.query(`SELECT ${columns} FROM workflow_runs WHERE id = $1`, [one]);
      const [b] = await apps.dataSource.query(`SELECT ${columns} FROM workflow_runs WHERE id = $1`, [other]);
      expect(b).toEqual(a);
      expect(await logOf(one)).toEqual(await logOf(other));
    });

    it('applies them one by one to a run that has moved already, or when one asks for work of its own', async () => {
      const rung = await seedRun('ringing');
      const at = new Date(Date.now() - 500);
      // Ringing from a duplicate that came first: the one move is tried and does not apply, then the events one by one
      // do, and ringing is not logged twice.
      expect(await statementsFor(rung, together(rung, at, { nothingBetween: true }))).toEqual({ moved: true, statements: 4 });
      expect(await logOf(rung)).toEqual(fullLog.slice(1));
      expect(await readRow(rung)).toMatchObject({ status: 'completed', answered_at: at });

      // An answering-machine verdict is applied on the answer, before the hang-up: not tried as one move.
      const machine = await seedRun('dialing');
      const job = together(machine, at, { nothingBetween: true });
      job.following = [events(machine, 'answered', at, { answeredBy: 'machine' }), events(machine, 'completed', at, { durationSeconds: 0 })];
      expect(await statementsFor(machine, job)).toEqual({ moved: true, statements: 3 });
      const [row] = await apps.dataSource.query(`SELECT status, gathered_context FROM workflow_runs WHERE id = $1`, [machine]);
      expect(row).toEqual({ status: 'completed', gathered_context: { answered_by: 'machine' } });

      // A run already ended changes no further.
      expect(await statementsFor(rung, together(rung, at, { nothingBetween: true }))).toEqual({ moved: false, statements: 4 });
      expect(await logOf(rung)).toEqual(fullLog.slice(1));
    });
  });
});
