import { testConfig } from '../../../test/support/test-config';
import { ConcurrencyLimiter } from './concurrency-limiter';
import { RedisClient } from './redis-client';

/** Against this test run's Redis, under its queue prefix. */
describe('ConcurrencyLimiter.releaseLease', () => {
  let client: RedisClient;
  let slots: ConcurrencyLimiter;
  let configurationId = 900_000 + Math.floor(Math.random() * 100_000);

  beforeAll(() => {
    client = new RedisClient(testConfig());
    slots = new ConcurrencyLimiter(client);
  });
  afterAll(() => client.onApplicationShutdown());
  beforeEach(() => {
    configurationId += 1;
  });
  afterEach(() => client.redis.del(slots.key(configurationId)));

  it('frees the slot while it holds the lease read, however Redis spelled that number', async () => {
    await client.redis.zadd(slots.key(configurationId), '1764000000000.001', '7');
    // As Redis before 7.2 printed the same score (17 significant digits), read before a failover to a newer one.
    await slots.releaseLease(configurationId, 7, '1764000000000.0010000000000');
    expect(await slots.lease(configurationId, 7)).toBeNull();
  });

  it('leaves a slot renewed since the lease was read, and a run holding none', async () => {
    await client.redis.zadd(slots.key(configurationId), '1764000000000.002', '7');
    await slots.releaseLease(configurationId, 7, '1764000000000.001');
    expect(Number(await slots.lease(configurationId, 7))).toBe(1764000000000.002);
    await slots.releaseLease(configurationId, 8, '1764000000000.001');
    expect(await client.redis.zcard(slots.key(configurationId))).toBe(1);
  });
});
