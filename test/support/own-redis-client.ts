import { AppConfig } from '@app/config';
import { RedisClient } from '@app/queue';
import { queuePrefixBeside, testRunResources } from './test-run-id';

/**
 * A Redis client whose keys go under this worker's queue prefix with
 * `suffix` added, so a suite's keys are its own; `drop` deletes them all and
 * closes the client.
 */
export function ownRedisClient(suffix: string): { client: RedisClient; drop(): Promise<void> } {
  const config = { redisUrl: 'redis://127.0.0.1:6379', queuePrefix: queuePrefixBeside(testRunResources().queuePrefix, suffix) } as AppConfig;
  const client = new RedisClient(config);
  return {
    client,
    async drop() {
      const keys = await client.redis.keys(`${client.keyFor('')}*`);
      if (keys.length) await client.redis.del(...keys);
      await client.onApplicationShutdown();
    },
  };
}
