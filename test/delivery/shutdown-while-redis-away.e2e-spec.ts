import { getQueueToken } from '@nestjs/bullmq';
import { Queue } from 'bullmq';
import { QueueName } from '@app/queue';
import { TcpProxy } from '../support/tcp-proxy';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

/** Longer than the longest wait between two reconnection attempts (2 s and its jitter). */
const RECONNECT_QUIET_MS = 3_000;

describe('the gateway closed while Redis is away', () => {
  const redis = new TcpProxy('127.0.0.1', 6379);
  let apps: TestApps | undefined;

  afterAll(async () => {
    await apps?.close();
    await redis.stop();
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
});
