import { AppConfig } from '@app/config';
import { NewRun, WorkflowRunStore } from '@app/persistence';
import { CallsQueue, PlaceCallJob } from '@app/queue';
import { MAX_ENQUEUES_UNANSWERED, MAX_WAIT_MS, MAX_WAITING, RunIntake } from './run-intake.service';

function newRun(phoneNumber: string): NewRun {
  return {
    organizationId: 7,
    workflowId: 3,
    environment: 'production',
    triggerUuid: '00000000-0000-4000-8000-000000000000',
    apiKeyId: 1,
    telephonyConfigurationId: 2,
    provider: 'sandbox',
    phoneNumber,
    initialContext: {},
  };
}

function intakeWith(
  insertQueued: (runs: NewRun[]) => Promise<Array<number | null>>,
  enqueue: (jobs: PlaceCallJob[], bands?: readonly number[]) => Promise<void>,
) {
  const store = { insertQueued: jest.fn(insertQueued) };
  // Bands as a backlog would answer them: the n-th job counted in so far is band n (enough to tell them apart here).
  let counted = 0;
  const queue = {
    enqueuePlaceCall: jest.fn(enqueue),
    countIn: jest.fn(async (organizationIds: readonly number[]) => organizationIds.map(() => ++counted)),
    runsWithoutJobs: jest.fn(async (runIds: readonly number[]) => [...runIds]),
    uncount: jest.fn(async (_organizationId: number, _band: number) => undefined),
  };
  const config = { databasePoolSize: 10, enqueueTimeoutMs: 100 } as AppConfig;
  const intake = new RunIntake(store as unknown as WorkflowRunStore, queue as unknown as CallsQueue, config);
  return { intake, store, queue, config };
}

describe('RunIntake', () => {
  let nextId = 100;
  const assignIds = async (runs: NewRun[]) => runs.map(() => nextId++);

  it('stores concurrent runs with one INSERT and enqueues them with one call, answering each its own id', async () => {
    const { intake, store, queue } = intakeWith(assignIds, async () => undefined);
    const ids = await Promise.all(['+1', '+2', '+3'].map((phone) => intake.accept(newRun(phone))));
    expect(new Set(ids).size).toBe(3);
    expect(store.insertQueued).toHaveBeenCalledTimes(1);
    expect(store.insertQueued.mock.calls[0][0].map((run) => run.phoneNumber)).toEqual(['+1', '+2', '+3']);
    expect(queue.enqueuePlaceCall).toHaveBeenCalledTimes(1);
    const route = { telephonyConfigurationId: 2, workflowId: 3, environment: 'production', triggerUuid: newRun('+1').triggerUuid };
    expect(queue.enqueuePlaceCall.mock.calls[0][0]).toEqual(ids.map((runId) => ({ runId, organizationId: 7, route })));
    // Counted in once, for the group, and enqueued with the bands answered.
    expect(queue.countIn.mock.calls).toEqual([[[7, 7, 7]]]);
    expect(queue.enqueuePlaceCall.mock.calls[0][1]).toEqual([1, 2, 3]);
    expect(queue.uncount).not.toHaveBeenCalled();
  });

  it('takes the next groups into the database while an enqueue is still waiting for Redis, and answers each once its own is done', async () => {
    // Redis holds the enqueue (a partition, a failover's pause) until released here.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const { intake, store, queue } = intakeWith(assignIds, () => held);
    const answered: number[] = [];
    // Three groups, one after another: the intake has two insert slots.
    const accepting: Array<Promise<number | null>> = [];
    for (const phone of ['+1', '+2', '+3']) {
      accepting.push(intake.accept(newRun(phone)).then((id) => (answered.push(id!), id)));
      await new Promise((resolve) => setImmediate(resolve));
    }
    for (let turn = 0; store.insertQueued.mock.calls.length < 3 && turn < 100; turn++) await new Promise((resolve) => setImmediate(resolve));
    // All three stored, their enqueues all waiting on Redis, and none answered before its job is queued.
    expect(store.insertQueued).toHaveBeenCalledTimes(3);
    expect(queue.enqueuePlaceCall).toHaveBeenCalledTimes(3);
    expect(answered).toEqual([]);
    release();
    expect(new Set(await Promise.all(accepting)).size).toBe(3);
  });

  it(`leaves to the dispatcher at once the jobs of groups past ${MAX_ENQUEUES_UNANSWERED} whose enqueues Redis has not answered`, async () => {
    // Redis holds every answer (a partition): the commands would gather in the connection's memory.
    const { intake, store, queue } = intakeWith(assignIds, () => new Promise<void>(() => undefined));
    const groups = MAX_ENQUEUES_UNANSWERED + 6;
    const accepting: Array<Promise<number | null>> = [];
    for (let group = 0; group < groups; group++) {
      accepting.push(intake.accept(newRun(`+${group}`)));
      await new Promise((resolve) => setImmediate(resolve));
    }
    // Every trigger is stored and answered (the held ones once ENQUEUE_TIMEOUT_MS has passed).
    expect(new Set(await Promise.all(accepting)).size).toBe(groups);
    expect(store.insertQueued).toHaveBeenCalledTimes(groups);
    expect(queue.enqueuePlaceCall).toHaveBeenCalledTimes(MAX_ENQUEUES_UNANSWERED);
    // The runs whose jobs were not sent are counted out of their backlogs, for the dispatcher to count them in.
    await new Promise((resolve) => setImmediate(resolve));
    expect(queue.uncount).toHaveBeenCalledTimes(6);
  });

  it('answers null and enqueues nothing for a run the store left out because its Idempotency-Key is held', async () => {
    const { intake, queue } = intakeWith(async (runs) => runs.map((run) => (run.idempotency ? null : nextId++)), async () => undefined);
    const held = { ...newRun('+2'), idempotency: { key: 'taken', requestHash: 'a'.repeat(64) } };
    const ids = await Promise.all([intake.accept(newRun('+1')), intake.accept(held)]);
    expect(ids[1]).toBeNull();
    expect(typeof ids[0]).toBe('number');
    expect(queue.enqueuePlaceCall.mock.calls.flatMap((call) => call[0].map((job) => job.runId))).toEqual([ids[0]]);
    // The run left out was counted in with the group: it is counted out again, at its band.
    expect(queue.enqueuePlaceCall.mock.calls[0][1]).toEqual([1]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(queue.uncount.mock.calls).toEqual([[7, 2]]);
  });

  it('stores the others when the database refuses one run of the group, and fails only that one', async () => {
    const { intake, store, queue } = intakeWith(async (runs) => {
      if (runs.some((run) => run.phoneNumber === '+bad')) throw Object.assign(new Error('violates foreign key'), { code: '23503' });
      return assignIds(runs);
    }, async () => undefined);
    const outcomes = await Promise.allSettled(['+1', '+bad', '+3'].map((phone) => intake.accept(newRun(phone))));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(store.insertQueued).toHaveBeenCalledTimes(4);
    const enqueued = queue.enqueuePlaceCall.mock.calls.flatMap((call) => call[0].map((job) => job.runId));
    expect(enqueued).toEqual(outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : [])));
  });

  it('sends a refused group again one run at a time, each group in flight holding one connection', async () => {
    let inFlight = 0;
    let most = 0;
    // The runs sent alone wait here until both groups are being sent again: their overlap does not hang on timing.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const { intake } = intakeWith(async (runs) => {
      if (runs.length > 1) throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
      inFlight += 1;
      most = Math.max(most, inFlight);
      await held;
      inFlight -= 1;
      return assignIds(runs);
    }, async () => undefined);
    const sending = async (count: number) => {
      for (let turn = 0; inFlight < count && turn < 1_000; turn++) await new Promise((resolve) => setImmediate(resolve));
      expect(inFlight).toBeGreaterThanOrEqual(count);
    };
    // Two groups: the second forms while the first is being sent again.
    const first = Array.from({ length: 6 }, (_, index) => intake.accept(newRun(`+1${index}`)));
    await sending(1);
    const second = Array.from({ length: 6 }, (_, index) => intake.accept(newRun(`+2${index}`)));
    await sending(2);
    release();
    const ids = await Promise.all([...first, ...second]);
    expect(new Set(ids).size).toBe(12);
    // Both groups were sent again side by side, one statement each: two connections, not eight.
    expect(most).toBe(2);
  });

  it('fails the whole group at once when the database is unreachable, without retrying each run', async () => {
    const { intake, store, queue } = intakeWith(
      async () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
      async () => undefined,
    );
    const outcomes = await Promise.allSettled(['+1', '+2'].map((phone) => intake.accept(newRun(phone))));
    expect(outcomes.every((outcome) => outcome.status === 'rejected')).toBe(true);
    expect(store.insertQueued).toHaveBeenCalledTimes(1);
    expect(queue.enqueuePlaceCall).not.toHaveBeenCalled();
    await new Promise((resolve) => setImmediate(resolve));
    expect(queue.uncount.mock.calls).toEqual([
      [7, 1],
      [7, 2],
    ]);
  });

  it('answers 503 at once, storing nothing, for triggers past what may wait while the database holds the inserts', async () => {
    // On a clock the test moves: the database holds every insert (each for as long as its read timeout would allow).
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick'] });
    try {
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const { intake, store } = intakeWith(async (runs) => (await held, assignIds(runs)), async () => undefined);
      const outcome = (phone: string) => intake.accept(newRun(phone)).then(
        (id) => ({ id }),
        (error: { status?: number; code?: string; message: string }) => ({ status: error.status, code: error.code, message: error.message }),
      );
      // Two groups of 200 taken by the two inserts the pool allows, then MAX_WAITING waiting behind them.
      const taken = Array.from({ length: 400 }, (_, index) => outcome(`+1${index}`));
      await new Promise((resolve) => setImmediate(resolve));
      expect(store.insertQueued).toHaveBeenCalledTimes(2);
      const waiting = Array.from({ length: MAX_WAITING }, (_, index) => outcome(`+2${index}`));
      await expect(outcome('+3')).resolves.toEqual({
        status: 503,
        code: 'service_unavailable',
        message: 'Too many triggers are waiting for the database; nothing was stored: retry',
      });

      // Waited MAX_WAIT_MS without an insert taking them: refused, never sent to the database.
      await jest.advanceTimersByTimeAsync(MAX_WAIT_MS);
      const refused = await Promise.all(waiting);
      expect(new Set(refused.map((answer) => JSON.stringify(answer)))).toEqual(
        new Set([JSON.stringify({ status: 503, code: 'service_unavailable', message: 'The database did not take this trigger in time; nothing was stored: retry' })]),
      );
      release();
      const stored = await Promise.all(taken);
      expect(stored.every((answer) => 'id' in answer && typeof answer.id === 'number')).toBe(true);
      expect(store.insertQueued).toHaveBeenCalledTimes(2);
      // The database answering again, triggers are taken as before.
      await expect(intake.accept(newRun('+4'))).resolves.toEqual(expect.any(Number));
    } finally {
      jest.useRealTimers();
    }
  });

  it('counts the runs out of their backlogs again when their jobs are refused (the dispatcher counts them in anew), those found without a job', async () => {
    const { intake, queue } = intakeWith(assignIds, async () => Promise.reject(new Error('Connection is closed.')));
    // The first run's job was added all the same (the connection closed once the command was sent).
    queue.runsWithoutJobs.mockImplementation(async (runIds) => runIds.slice(1));
    const ids = await Promise.all(['+1', '+2'].map((phone) => intake.accept(newRun(phone))));
    expect(ids.every((id) => typeof id === 'number')).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(queue.runsWithoutJobs).toHaveBeenCalledWith(ids);
    expect(queue.uncount.mock.calls).toEqual([[7, 2]]);
  });

  it('leaves the runs to the dispatcher when their bands cannot be counted (Redis away), answering their ids', async () => {
    const { intake, queue } = intakeWith(assignIds, async () => undefined);
    queue.countIn.mockRejectedValueOnce(new Error('connect ECONNREFUSED 127.0.0.1:6379'));
    const ids = await Promise.all(['+1', '+2'].map((phone) => intake.accept(newRun(phone))));
    expect(ids.every((id) => typeof id === 'number')).toBe(true);
    expect(queue.enqueuePlaceCall).not.toHaveBeenCalled();
  });

  it('logs the groups left to the dispatcher while Redis is away one line per 10 s, counting those left out', async () => {
    const { intake, queue } = intakeWith(assignIds, async () => Promise.reject(new Error("Stream isn't writeable and enableOfflineQueue options is false")));
    const warn = jest.spyOn(intake['logger'], 'warn').mockImplementation(() => undefined);
    let now = 5_000_000;
    const clock = jest.spyOn(Date, 'now').mockImplementation(() => now);
    try {
      for (let group = 0; group < 20; group++) expect(typeof (await intake.accept(newRun(`+1${group}`)))).toBe('number');
      expect(queue.enqueuePlaceCall).toHaveBeenCalledTimes(20);
      const leftToDispatcher = () => warn.mock.calls.filter(([, message]) => String(message).startsWith('dial jobs not enqueued'));
      expect(leftToDispatcher()).toHaveLength(1);
      now += 10_000;
      await intake.accept(newRun('+199'));
      expect(leftToDispatcher()).toHaveLength(2);
      expect(leftToDispatcher()[1][0]).toMatchObject({ groups_left_out: 19 });
    } finally {
      clock.mockRestore();
    }
  });

  it('answers once the runs are stored even when Redis does not answer within ENQUEUE_TIMEOUT_MS', async () => {
    // On a clock the test moves: the enqueue never settles, so only ENQUEUE_TIMEOUT_MS passing can let the answer go.
    jest.useFakeTimers();
    try {
      const { intake, store, queue, config } = intakeWith(assignIds, () => new Promise<void>(() => undefined));
      const timeoutMs = config.enqueueTimeoutMs;
      let answered: Array<number | null> | undefined;
      void Promise.all(['+1', '+2'].map((phone) => intake.accept(newRun(phone)))).then((ids) => (answered = ids));

      // Just short of the timeout: stored and asked to enqueue, the runs still wait for Redis.
      await jest.advanceTimersByTimeAsync(timeoutMs - 1);
      expect(store.insertQueued).toHaveBeenCalledTimes(1);
      expect(queue.enqueuePlaceCall).toHaveBeenCalledTimes(1);
      expect(answered).toBeUndefined();

      // At the timeout, with Redis still silent: each run answers its stored id.
      await jest.advanceTimersByTimeAsync(1);
      const stored = await store.insertQueued.mock.results[0].value;
      expect(answered).toEqual(stored);
      expect(queue.enqueuePlaceCall.mock.calls[0][0].map((job) => job.runId)).toEqual(stored);
    } finally {
      jest.useRealTimers();
    }
  });
});
