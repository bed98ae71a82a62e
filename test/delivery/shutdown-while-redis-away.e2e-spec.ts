import { getQueueToken } from '@nestjs/bullmq';
import { Queue } from 'bullmq';
import { QueueName } from '@app/queue';
import { TcpProxy } from '../support/tcp-proxy';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

/** Longer than the longest wait between two reconnection attempts (2 s and its jitter). */
const RECONNECT_QUIET_MS = 3_000;

describe('the apps closed while Redis is away', () => {
  const redis = new TcpProxy('127.0.0.1', 6379);
  const dialerRedis = new TcpProxy('127.0.0.1', 6379);
  let apps: TestApps | undefined;

  afterAll(async () => {
    await apps?.close();
    await redis.stop();
    await dialerRedis.stop();
  });

  it('leaves no Redis connection trying to reconnect, which would hold its process open', async () => {
    const port = await redis.start();
    apps = await startTestApps({ dialer: false, env: { REDIS_URL: `redis://127.0.0.1:${port}` } });
    const queues = [QueueName.Calls, QueueName.CallEvents].map((name) => apps!.api.get<Queue>(getQueueToken(name)));
    const clients = await Promise.all(queues.map((queue) => queue.getBackend().client));
    expect(clients.map((client) => client.status)).toEqual(['ready', 'ready']);

    await redis.cut();
    await waitFor(async () => (clients.every((client) => client.status === 'reconnecting') ? true : undefined), {
      what: "the queues' connections to wait to reconnect",
    });
    await apps.close();
    apps = undefined;

    // Redis back: a connection still trying would reach it within its next attempt.
    await redis.restore();
    const accepted = redis.accepted;
    await new Promise((resolve) => setTimeout(resolve, RECONNECT_QUIET_MS));
    expect(redis.accepted - accepted).toBe(0);
  });

  it("closes a dialer whose queue connection holds a command waiting for Redis, without waiting for Redis", async () => {
    const port = await dialerRedis.start();
    apps = await startTestApps({ env: { REDIS_URL: `redis://127.0.0.1:${port}`, SHUTDOWN_GRACE_MS: '500' } });
    const dialer = apps.dialer!;
    const queue = dialer.get<Queue>(getQueueToken(QueueName.Calls));
    const client = await queue.getBackend().client;
    await dialerRedis.cut();
    await waitFor(async () => (client.status === 'reconnecting' ? true : undefined), { what: "the dialer's queue connection to wait to reconnect" });
    // What a reaper's look-up of a job, or a dispatcher's enqueue, leaves in the offline queue while Redis is away.
    const waiting = queue.getJob('run-0').then(
      () => 'answered',
      () => 'refused',
    );

    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const closed = await Promise.race([
      dialer.close().then(() => 'closed'),
      new Promise((resolve) => (timer = setTimeout(() => resolve('still closing'), 15_000))),
    ]);
    clearTimeout(timer);
    expect(closed).toBe('closed');
    expect(Date.now() - started).toBeLessThan(10_000);
    await expect(waiting).resolves.toBe('refused');
    await dialerRedis.restore();
  }, 30_000);
});
