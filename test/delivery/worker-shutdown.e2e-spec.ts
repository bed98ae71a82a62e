import { randomUUID } from 'node:crypto';
import { Job, Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { Logger } from '@nestjs/common';
import { AppConfig } from '@app/config';
import { redisConnectionOptions } from '@app/queue';
import { CallEventsProcessor } from '../../apps/dialer/src/call-events/call-events.processor';
import { PlaceCallProcessor } from '../../apps/dialer/src/calls/place-call.processor';
import { WorkerShutdown } from '../../apps/dialer/src/worker-shutdown.service';
import { TcpProxy } from '../support/tcp-proxy';
import { testRunResources } from '../support/test-run-id';
import { waitFor } from '../support/wait-for';

const connection = { url: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', maxRetriesPerRequest: null };

/** Settles with what `work` settled with, or with 'still waiting' after `ms`. */
function within<T>(ms: number, work: Promise<T>): Promise<T | 'still waiting'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'still waiting'>((resolve) => {
    timer = setTimeout(() => resolve('still waiting'), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

describe('a dialer shutting down', () => {
  const { queuePrefix } = testRunResources();
  const queues: Queue[] = [];
  const workers: Worker[] = [];

  beforeAll(() => Logger.overrideLogger(false));
  afterAll(async () => {
    // The hanging dial is never let go: once it ended, its worker (closed by force) would reconnect a client, which
    // a dialer's process, exiting after its shutdown, never sees.
    await Promise.all(workers.map((worker) => worker.close(true)));
    for (const queue of queues) {
      try {
        await queue.obliterate({ force: true });
      } finally {
        await queue.close();
      }
    }
  });

  /** A queue of its own, one job added, and a worker whose processor starts it and waits for `finish`. */
  async function workerWithJobInFlight(finish: Promise<unknown>): Promise<{ worker: Worker; queue: Queue; job: Job }> {
    const name = `shutdown-${randomUUID()}`;
    const queue = new Queue(name, { connection, prefix: queuePrefix });
    queues.push(queue);
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const worker = new Worker(
      name,
      async () => {
        started();
        await finish;
        return 'done';
      },
      { connection, prefix: queuePrefix },
    );
    workers.push(worker);
    const job = await queue.add('dial', {});
    await running;
    return { worker, queue, job };
  }

  /** An idle worker, as the call-events one is while a dial hangs. */
  function idleWorker(): Worker {
    const worker = new Worker(`shutdown-idle-${randomUUID()}`, async () => undefined, { connection, prefix: queuePrefix });
    workers.push(worker);
    return worker;
  }

  /** A proxy in front of the test's Redis, to cut and restore, and its port. */
  async function redisProxy(): Promise<{ proxy: TcpProxy; port: number }> {
    const redis = new URL(connection.url);
    const proxy = new TcpProxy(redis.hostname, Number(redis.port || 6379));
    return { proxy, port: await proxy.start() };
  }

  /** An idle worker as a dialer has it (the dialer's own connection options), through a proxy on `port` that can be cut. */
  function idleWorkerThrough(port: number): Worker {
    const worker = new Worker(`shutdown-proxied-${randomUUID()}`, async () => undefined, {
      connection: redisConnectionOptions(`redis://127.0.0.1:${port}`, 'worker'),
      prefix: queuePrefix,
    });
    // Its connection errors while Redis is away are the test's doing.
    worker.on('error', () => undefined);
    workers.push(worker);
    return worker;
  }

  /** The worker's blocking connection, once it is ready. */
  async function readyBlockingClient(worker: Worker): Promise<Redis> {
    await worker.waitUntilReady();
    const client = (await worker.backend.blockingConnection!.client) as unknown as Redis;
    await waitFor(async () => (client.status === 'ready' ? true : undefined), { what: 'the blocking connection' });
    return client;
  }

  function shutdownOf(calls: Worker, events: Worker, shutdownGraceMs: number): WorkerShutdown {
    return new WorkerShutdown(
      { worker: calls } as unknown as PlaceCallProcessor,
      { worker: events } as unknown as CallEventsProcessor,
      { shutdownGraceMs } as AppConfig,
    );
  }

  it('closes its workers by force once the grace period is over, with a dial still hanging', async () => {
    const hanging = new Promise<void>(() => undefined);
    const { worker } = await workerWithJobInFlight(hanging);
    const events = idleWorker();

    const closed: Worker[] = [];
    for (const each of [worker, events]) each.once('closed', () => closed.push(each));

    const startedAt = Date.now();
    const outcome = await within(5000, shutdownOf(worker, events, 300).beforeApplicationShutdown('SIGTERM').then(() => 'closed'));

    expect(outcome).toBe('closed');
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(300);
    // Closed with the dial still hanging: its lock is no longer renewed, so another dialer takes the job up.
    expect(closed).toEqual(expect.arrayContaining([worker, events]));
  });

  it('lets a dial in flight finish within the grace period, and its job completes', async () => {
    const { worker, job } = await workerWithJobInFlight(new Promise((resolve) => setTimeout(resolve, 200)));
    const events = idleWorker();

    const outcome = await within(5000, shutdownOf(worker, events, 5000).beforeApplicationShutdown('SIGTERM').then(() => 'closed'));

    expect(outcome).toBe('closed');
    expect(await job.getState()).toBe('completed');
    expect(worker.isRunning()).toBe(false);
  });

  it('stops, drained, without waiting out its grace when asked while its connections wait to reconnect after a Redis blip', async () => {
    const { proxy, port } = await redisProxy();
    const logged = jest.spyOn(Logger.prototype, 'log');
    const warned = jest.spyOn(Logger.prototype, 'warn');
    try {
      const [calls, events] = ['calls', 'events'].map(() => idleWorkerThrough(port));
      const blocking = await Promise.all([calls, events].map(readyBlockingClient));

      // Redis goes away long enough for each connection to wait 800 ms or more between attempts, and comes back.
      const attempts = blocking.map(() => 0);
      blocking.forEach((client, index) => client.on('reconnecting', () => attempts[index]++));
      await proxy.cut();
      await waitFor(async () => (blocking.every((client, index) => client.status === 'reconnecting' && attempts[index] >= 5) ? true : undefined), {
        what: 'five attempts to reconnect',
      });
      await proxy.restore();
      // Asked to stop before either connection's next attempt (no await between this check and the shutdown's start).
      expect(blocking.map((client) => client.status)).toEqual(['reconnecting', 'reconnecting']);
      // One reconnection delay (2 s at most), then the pause of two idle workers (which may wait out BullMQ's 6 s
      // watchdog on a fetch the blip interrupted): well within 12 s, and drained, where the grace is 20 s.
      const outcome = await within(12_000, shutdownOf(calls, events, 20_000).beforeApplicationShutdown('SIGTERM').then(() => 'closed'));

      expect(outcome).toBe('closed');
      expect(logged).toHaveBeenCalledWith({ signal: 'SIGTERM' }, 'workers drained');
      expect(warned).not.toHaveBeenCalled();
    } finally {
      logged.mockRestore();
      warned.mockRestore();
      await proxy.stop();
    }
  });

  it('closes once drained, though a worker that paused early has lost its connection to Redis since', async () => {
    const { proxy, port } = await redisProxy();
    const logged = jest.spyOn(Logger.prototype, 'log');
    try {
      let finish!: () => void;
      const { worker: calls, job } = await workerWithJobInFlight(new Promise<void>((resolve) => (finish = resolve)));
      // The idle worker reaches Redis through a proxy that can be cut; the busy one directly.
      const events = idleWorkerThrough(port);
      const blocking = await readyBlockingClient(events);
      const paused = new Promise<void>((resolve) => events.once('paused', () => resolve()));

      const shutdown = within(12_000, shutdownOf(calls, events, 20_000).beforeApplicationShutdown('SIGTERM').then(() => 'closed'));
      // The idle worker pauses at once; the other waits for its dial, during which the idle one's Redis goes away.
      await paused;
      await proxy.cut();
      await waitFor(async () => (blocking.status === 'reconnecting' ? true : undefined), { what: 'the paused worker to lose its connection' });
      finish();

      expect(await shutdown).toBe('closed');
      expect(await job.getState()).toBe('completed');
      expect(logged).toHaveBeenCalledWith({ signal: 'SIGTERM' }, 'workers drained');
    } finally {
      logged.mockRestore();
      await proxy.stop();
    }
  });

  it('closes by force after its grace, saying Redis is away rather than dials in flight, when Redis stays away', async () => {
    const { proxy, port } = await redisProxy();
    const warned = jest.spyOn(Logger.prototype, 'warn');
    try {
      const [calls, events] = ['calls', 'events'].map(() => idleWorkerThrough(port));
      const blocking = await Promise.all([calls, events].map(readyBlockingClient));
      await proxy.cut();
      await waitFor(async () => (blocking.every((client) => client.status === 'reconnecting') ? true : undefined), { what: 'the connections to be lost' });

      const closed: Worker[] = [];
      for (const each of [calls, events]) each.once('closed', () => closed.push(each));
      const outcome = await within(5000, shutdownOf(calls, events, 500).beforeApplicationShutdown('SIGTERM').then(() => 'closed'));

      expect(outcome).toBe('closed');
      expect(closed).toEqual(expect.arrayContaining([calls, events]));
      expect(warned).toHaveBeenCalledWith({ signal: 'SIGTERM', grace_ms: 500 }, 'Redis still away after the grace period; closing the workers anyway');
    } finally {
      warned.mockRestore();
      await proxy.stop();
    }
  });
});
