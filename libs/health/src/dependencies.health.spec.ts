import { Logger } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { DataSource } from 'typeorm';
import { redisConnectionOptions } from '@app/queue/redis-connection';
import { TcpProxy } from '../../../test/support/tcp-proxy';
import { testRunResources } from '../../../test/support/test-run-id';
import { waitFor } from '../../../test/support/wait-for';
import { DependenciesHealth } from './dependencies.health';

describe('the Redis readiness probe on a worker connection', () => {
  const proxy = new TcpProxy('127.0.0.1', 6379);
  let queue: Queue;
  let health: DependenciesHealth;

  beforeAll(async () => {
    const port = await proxy.start();
    // The dialer's connection: the offline queue on, retrying forever.
    queue = new Queue('health-probe', {
      connection: redisConnectionOptions(`redis://127.0.0.1:${port}`, 'worker'),
      prefix: testRunResources().queuePrefix,
    });
    health = new DependenciesHealth(new HealthIndicatorService(), {} as DataSource, queue);
  });

  afterAll(async () => {
    await proxy.restore();
    await queue.close();
    await proxy.stop();
  });

  it('is up with Redis there, and down without sending a command while the connection is away', async () => {
    expect((await health.redis()).redis).toEqual({ status: 'up' });

    const client = await queue.backend.client;
    await proxy.cut();
    await waitFor(async () => (client.status === 'ready' ? undefined : client.status), { what: 'the connection to drop' });
    // On the ioredis class: BullMQ hands out a proxy of its client, which a spy on the instance would not see through.
    const sent = jest.spyOn(Redis.prototype, 'sendCommand');
    const logged = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      for (let probe = 0; probe < 3; probe += 1) {
        expect((await health.redis()).redis).toMatchObject({ status: 'down', message: 'redis did not answer (the reason is in the log)' });
      }
      // Each would have waited in the offline queue, to run once Redis is back.
      expect(sent).not.toHaveBeenCalled();
      expect(logged).toHaveBeenCalledWith({ dependency: 'redis', err: expect.objectContaining({ message: expect.stringMatching(/^the Redis connection is /) }) }, 'readiness probe failed');
    } finally {
      jest.restoreAllMocks();
    }

    await proxy.restore();
    await waitFor(async () => (client.status === 'ready' ? true : undefined), { what: 'the connection to return' });
    expect((await health.redis()).redis).toEqual({ status: 'up' });
  });

  it('sends nothing for the probes that ran out of time while Redis was away from the start, once it comes', async () => {
    const late = new TcpProxy('127.0.0.1', 6379);
    const port = await late.start();
    await late.cut();
    const startedAway = new Queue('health-probe-boot', {
      connection: redisConnectionOptions(`redis://127.0.0.1:${port}`, 'worker'),
      prefix: testRunResources().queuePrefix,
    });
    startedAway.on('error', () => undefined);
    const probe = new DependenciesHealth(new HealthIndicatorService(), {} as DataSource, startedAway);
    const counted = jest.spyOn(startedAway, 'count');
    const logged = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      for (let attempt = 0; attempt < 2; attempt += 1) expect((await probe.redis()).redis).toMatchObject({ status: 'down' });
      expect(logged).toHaveBeenCalledTimes(2);
      await late.restore();
      const client = await startedAway.backend.client;
      await waitFor(async () => (client.status === 'ready' ? true : undefined), { what: 'the first connection' });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(counted).not.toHaveBeenCalled();
      expect((await probe.redis()).redis).toEqual({ status: 'up' });
      expect(counted).toHaveBeenCalledTimes(1);
    } finally {
      jest.restoreAllMocks();
      await startedAway.close();
      await late.stop();
    }
  });
});
