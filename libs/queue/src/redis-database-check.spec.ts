import { ConfigError } from '@app/config';
import { TcpProxy } from '../../../test/support/tcp-proxy';
import { checkRedisDatabase } from './redis-database-check';

/** Against the machine's Redis, which has the default 16 databases (0–15). */
describe('checkRedisDatabase', () => {
  it('refuses a database number the Redis server does not have, naming it', async () => {
    const refusal = await checkRedisDatabase('redis://127.0.0.1:6379/99', 2_000).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(ConfigError);
    expect((refusal as ConfigError).message).toContain('REDIS_URL selects database 99, which this Redis refuses');
  });

  it('takes a database the server has, and database 0 without asking', async () => {
    await expect(checkRedisDatabase('redis://127.0.0.1:6379/15', 2_000)).resolves.toBeUndefined();
    await expect(checkRedisDatabase('redis://127.0.0.1:6379', 2_000)).resolves.toBeUndefined();
  });

  it('leaves a Redis it cannot reach to the app, which starts as without one, once the wait is over', async () => {
    const started = Date.now();
    await expect(checkRedisDatabase('redis://127.0.0.1:1/3', 1_500)).resolves.toBeUndefined();
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(1_400);
    expect(waited).toBeLessThan(5_000);
  });

  it('checks a Redis that comes within the wait', async () => {
    const redis = new TcpProxy('127.0.0.1', 6379);
    const port = await redis.start();
    await redis.cut();
    try {
      setTimeout(() => void redis.restore(), 700);
      const refusal = await checkRedisDatabase(`redis://127.0.0.1:${port}/99`, 10_000).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(ConfigError);
    } finally {
      await redis.stop();
    }
  });
});
