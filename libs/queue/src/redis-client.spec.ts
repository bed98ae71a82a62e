import { AppConfig } from '@app/config';
import { testConfig } from '../../../test/support/test-config';
import { RedisClient } from './redis-client';

describe('RedisClient', () => {
  // Nothing listens on port 1: every connection attempt is refused at once.
  const away = { redisUrl: 'redis://127.0.0.1:1', queuePrefix: 'unused' } as AppConfig;

  it("starts a producer's client without Redis once its wait is over, and fails its commands at once", async () => {
    const client = new RedisClient(away, 'producer');
    try {
      const started = Date.now();
      await expect(client.onModuleInit()).resolves.toBeUndefined();
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_900);
      expect(Date.now() - started).toBeLessThan(5_000);
      const asked = Date.now();
      await expect(client.redis.ping()).rejects.toThrow();
      expect(Date.now() - asked).toBeLessThan(1_000);
    } finally {
      await client.onApplicationShutdown();
    }
  });

  it("does not wait for Redis when a worker's client starts: its commands wait instead", async () => {
    const client = new RedisClient(away, 'worker');
    try {
      const started = Date.now();
      await client.onModuleInit();
      expect(Date.now() - started).toBeLessThan(500);
    } finally {
      await client.onApplicationShutdown();
    }
  });

  it('closes once: a second shutdown leaves no timer behind to hold the process open', async () => {
    const client = new RedisClient(testConfig(), 'worker');
    await client.redis.ping();
    await client.onApplicationShutdown();
    await new Promise((resolve) => client.redis.once('end', resolve));
    const timers = () => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
    const before = timers();

    await client.onApplicationShutdown();

    expect(client.redis.status).toBe('end');
    expect(timers()).toBe(before);
  });
});
