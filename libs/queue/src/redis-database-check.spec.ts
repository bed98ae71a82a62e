import { ConfigError } from '@app/config';
import { checkRedisDatabase } from './redis-database-check';

/** Against the machine's Redis, which has the default 16 databases (0–15). */
describe('checkRedisDatabase', () => {
  it('refuses a database number the Redis server does not have, naming it', async () => {
    const refusal = await checkRedisDatabase('redis://127.0.0.1:6379/99').catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(ConfigError);
    expect((refusal as ConfigError).message).toContain('REDIS_URL selects database 99, which this Redis refuses');
  });

  it('takes a database the server has, and database 0 without asking', async () => {
    await expect(checkRedisDatabase('redis://127.0.0.1:6379/15')).resolves.toBeUndefined();
    await expect(checkRedisDatabase('redis://127.0.0.1:6379')).resolves.toBeUndefined();
  });

  it('leaves a Redis it cannot reach to the app, which starts as without one, within the check wait', async () => {
    const started = Date.now();
    await expect(checkRedisDatabase('redis://127.0.0.1:1/3')).resolves.toBeUndefined();
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
