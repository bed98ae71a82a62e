import { RedisClient } from '@app/queue';
import { testConfig } from '../../../../test/support/test-config';
import { waitFor } from '../../../../test/support/wait-for';
import { PeriodicTask } from './periodic-task';

/** Against this test run's Redis, under its queue prefix. */
describe('PeriodicTask', () => {
  let client: RedisClient;

  beforeAll(() => {
    client = new RedisClient(testConfig());
  });
  afterAll(() => client.onApplicationShutdown());

  it('keeps its lease through a round that outlasts it, so no other replica runs a round beside it', async () => {
    const name = `task-${Date.now()}`;
    const intervalMs = 100; // a lease of 1 s (its floor), renewed every 100 ms while a round runs
    const long = new PeriodicTask(name, intervalMs, client, () => new Promise((resolve) => setTimeout(resolve, 1600))).runOnce();
    await new Promise((resolve) => setTimeout(resolve, 1300)); // past the lease the round started with

    let otherRan = false;
    await new PeriodicTask(name, intervalMs, client, async () => {
      otherRan = true;
    }).runOnce();
    await long;

    expect(otherRan).toBe(false);
  });

  it('stops a round whose lease another replica took meanwhile (Redis away past it), rather than running beside its round', async () => {
    const name = `task-${Date.now()}-lost`;
    const intervalMs = 100;
    let stoppedAt: number | null = null;
    // A round that checks its signal every 20 ms, for 3 s at most.
    const round = new PeriodicTask(name, intervalMs, client, async (stopping) => {
      for (let waited = 0; waited < 3_000 && !stopping.aborted; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
      if (stopping.aborted) stoppedAt = Date.now();
    }).runOnce();
    await new Promise((resolve) => setTimeout(resolve, 250));

    // The lease lapsed (as behind a Redis outage) and another replica took it for a round of its own.
    await client.redis.del(client.keyFor('lease', name));
    let otherRan = false;
    const takenAt = Date.now();
    const other = new PeriodicTask(name, intervalMs, client, async () => {
      otherRan = true;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }).runOnce();
    await Promise.all([round, other]);

    expect(otherRan).toBe(true);
    expect(stoppedAt).not.toBeNull();
    // At its next renewal: an interval or two on an idle machine. A second leaves room for a loaded one (the tests run
    // two at a time on two cores) and is still a third of the 3 s the round would have gone on for.
    expect(stoppedAt! - takenAt).toBeLessThan(1_000);
  });

  it('tells a round that has run for its longest to stop, rather than running on once its lease lapses', async () => {
    const name = `task-${Date.now()}-long`;
    const intervalMs = 100;
    let stoppedAfter: number | null = null;
    const startedAt = performance.now();
    // A round that would go on for 3 s, checking its signal every 20 ms; its longest is 400 ms.
    await new PeriodicTask(
      name,
      intervalMs,
      client,
      async (stopping) => {
        for (let waited = 0; waited < 3_000 && !stopping.aborted; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
        if (stopping.aborted) stoppedAfter = performance.now() - startedAt;
      },
      undefined,
      400,
    ).runOnce();

    expect(stoppedAfter).not.toBeNull();
    // At the first renewal past 400 ms: an interval or two on an idle machine, with room for a loaded one.
    expect(stoppedAfter!).toBeGreaterThanOrEqual(400);
    expect(stoppedAfter!).toBeLessThan(1_500);
  });

  it('leaves the task to another replica once its rounds fail in a row (Postgres out of its reach), and takes it back alone', async () => {
    const name = `task-${Date.now()}-failing`;
    const intervalMs = 50; // a lease of 1 s
    let failing = 0;
    let healthy = 0;
    const broken = new PeriodicTask(name, intervalMs, client, async () => {
      failing += 1;
      throw new Error('connect ETIMEDOUT');
    });
    jest.spyOn(broken['logger'], 'warn').mockImplementation(() => undefined);
    broken.start();
    try {
      await waitFor(async () => (failing >= 1 ? true : undefined), { what: 'the broken replica to hold the task' });
      const other = new PeriodicTask(name, intervalMs, client, async () => {
        healthy += 1;
      });
      other.start();
      try {
        await waitFor(async () => (healthy >= 3 ? true : undefined), { timeoutMs: 5_000, what: 'the healthy replica to take the task over' });
        // Then the healthy replica keeps it: the broken one finds it held when its wait is over.
        const failedBefore = failing;
        await new Promise((resolve) => setTimeout(resolve, 2_500));
        expect(failing).toBe(failedBefore);
      } finally {
        await other.stop();
      }
      // Alone again, the broken replica takes the task back after its wait, and goes on trying.
      const failedAlone = failing;
      await waitFor(async () => (failing > failedAlone ? true : undefined), { timeoutMs: 5_000, what: 'the broken replica to try again alone' });
    } finally {
      await broken.stop();
    }
  });

  it('gives its lease up when it stops, so another replica takes the task over at once rather than once it runs out', async () => {
    const name = `task-${Date.now()}-handover`;
    let rounds = 0;
    // A lease of 30 s (three intervals of 10 s).
    const stopping = new PeriodicTask(name, 10_000, client, async () => {
      rounds++;
    });
    stopping.start();
    await waitFor(async () => (rounds > 0 ? true : undefined), { what: 'the first round' });
    await stopping.stop();

    let otherRan = false;
    await new PeriodicTask(name, 10_000, client, async () => {
      otherRan = true;
    }).runOnce();
    expect(otherRan).toBe(true);
  });

  it('tells the round in flight to stop when the task stops, waits for it to return, and runs no round after', async () => {
    const name = `task-${Date.now()}-stop`;
    let rounds = 0;
    let itemsDone = 0;
    let abortedInRound = false;
    let started!: () => void;
    const firstRound = new Promise<void>((resolve) => (started = resolve));
    // A round of 50 items of 50 ms each (2.5 s), which checks its signal between items.
    const task = new PeriodicTask(name, 50, client, async (stopping) => {
      rounds++;
      started();
      for (let item = 0; item < 50; item++) {
        if (stopping.aborted) {
          abortedInRound = true;
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
        itemsDone++;
      }
    });
    task.start();
    await firstRound;
    await new Promise((resolve) => setTimeout(resolve, 120));

    await task.stop();
    const doneAtStop = itemsDone;
    await new Promise((resolve) => setTimeout(resolve, 300)); // past the interval: no round is scheduled any more

    expect(abortedInRound).toBe(true);
    expect(doneAtStop).toBeGreaterThan(0);
    expect(doneAtStop).toBeLessThan(50);
    expect(itemsDone).toBe(doneAtStop);
    expect(rounds).toBe(1);
  });

  it('starts again after a stop with a signal not aborted', async () => {
    const name = `task-${Date.now()}-restart`;
    const seen: boolean[] = [];
    let ran!: () => void;
    let round = new Promise<void>((resolve) => (ran = resolve));
    const task = new PeriodicTask(name, 50, client, async (stopping) => {
      seen.push(stopping.aborted);
      ran();
    });
    task.start();
    await round;
    await task.stop();
    round = new Promise<void>((resolve) => (ran = resolve));
    task.start();
    await round;
    await task.stop();

    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(seen.every((aborted) => !aborted)).toBe(true);
  });

  it('stops waiting for a round that does not return (stuck on Redis), after its bound, and runs no round after', async () => {
    const name = `task-${Date.now()}-stuck`;
    let rounds = 0;
    let started!: () => void;
    const firstRound = new Promise<void>((resolve) => (started = resolve));
    // Held until the test's end, as by a Redis that never answers (then let go: a round left running renews its lease
    // for minutes, and would log every failed renewal once the test's Redis connection is closed).
    let unstick!: () => void;
    const task = new PeriodicTask(
      name,
      50,
      client,
      () => {
        rounds++;
        started();
        return new Promise<void>((resolve) => (unstick = resolve));
      },
      200,
    );
    task.start();
    await firstRound;
    const stoppedAt = Date.now();
    await task.stop();
    const waitedMs = Date.now() - stoppedAt;
    expect(waitedMs).toBeGreaterThanOrEqual(190);
    expect(waitedMs).toBeLessThan(5_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(rounds).toBe(1);
    unstick();
  });
});
