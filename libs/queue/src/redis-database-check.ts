import { Redis } from 'ioredis';
import { withTimeout } from '@app/common';
import { ConfigError } from '@app/config';
import { redisConnectionOptions } from './redis-connection';

/** How long the check waits for Redis: one away at start is the apps' ordinary case (the gateway starts without it). */
const CHECK_WAIT_MS = 2_000;

/**
 * Refuses to start on a REDIS_URL whose database number (`/16`) the Redis
 * server does not have. ioredis selects the database as it connects, and
 * when Redis refuses, it only emits an error and goes on in database 0:
 * a deployment told to keep apart from another on a shared Redis would
 * take that one's jobs. Checked once, on a connection of its own, before
 * the app's connections are made; a Redis that cannot be reached in time is
 * not a configuration error, and is left to the app's own handling.
 */
export async function checkRedisDatabase(redisUrl: string): Promise<void> {
  const { db, ...options } = redisConnectionOptions(redisUrl, 'producer');
  if (!db) return;
  const probe = new Redis({ ...options, lazyConnect: true, retryStrategy: () => null, connectTimeout: CHECK_WAIT_MS });
  probe.on('error', () => undefined);
  try {
    try {
      await withTimeout(probe.connect(), CHECK_WAIT_MS, 'connecting to Redis');
    } catch {
      return;
    }
    const refusal = await withTimeout(probe.select(db), CHECK_WAIT_MS, 'selecting the database').then(
      () => null,
      (error: unknown) => error,
    );
    if (refusal instanceof Error && refusal.name === 'ReplyError') {
      throw new ConfigError([
        `REDIS_URL selects database ${db}, which this Redis refuses (${refusal.message}); ` +
          'pick one it has (0 to its `databases` setting less one, 0–15 by default), or keep deployments apart with QUEUE_PREFIX',
      ]);
    }
  } finally {
    probe.disconnect();
  }
}
