import { createHash, randomUUID } from 'node:crypto';
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

  it('logs a database Redis refuses as the connection is made, which ioredis would go on without in database 0', async () => {
    const client = new RedisClient({ redisUrl: 'redis://127.0.0.1:6379/99', queuePrefix: 'unused' } as AppConfig, 'producer');
    const logged = jest.spyOn(client['logger'], 'error').mockImplementation(() => undefined);
    try {
      await client.onModuleInit();
      expect(logged).toHaveBeenCalledWith(expect.objectContaining({ err: expect.objectContaining({ message: expect.stringContaining('DB index') }) }), expect.stringContaining('working in database 0'));
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

  describe('scripts', () => {
    let client: RedisClient;
    beforeAll(() => {
      client = new RedisClient(testConfig(), 'worker');
    });
    afterAll(() => client.onApplicationShutdown());

    it('runs a script first made in the same turn as another command: it goes out beside it and answers', async () => {
      await client.redis.ping();
      const key = client.keyFor('script-test', randomUUID());
      // A text of its own: this Redis has never held it, so the first call is answered NOSCRIPT and sent again whole.
      const lua = `-- ${randomUUID()}\nreturn redis.call('INCRBY', KEYS[1], ARGV[1])`;
      try {
        const before = client.redis.get(key);
        const incr = client.script('vaScriptTest', lua, 1);
        const first = incr([key], [5]);

        await expect(before).resolves.toBeNull();
        await expect(first).resolves.toBe(5);
        const [held] = (await client.redis.script('EXISTS', createHash('sha1').update(lua).digest('hex'))) as number[];
        expect(held).toBe(1);
        await expect(incr([key], [2])).resolves.toBe(7);
      } finally {
        await client.redis.del(key);
      }
    });

    it('refuses a call with another number of keys than the script takes, before sending it', async () => {
      const script = client.script('vaScriptTest', 'return 1', 2);
      await expect(script(['only-one'], [])).rejects.toThrow('vaScriptTest takes 2 keys, was given 1');
    });

    it('passes a script error on as it is', async () => {
      const script = client.script('vaScriptTest', `return redis.error_reply('NOTHING ${randomUUID()}')`, 0);
      await expect(script([], [])).rejects.toThrow(/^NOTHING /);
    });
  });
});
