import { Redis } from 'ioredis';
import { ConfigError } from '@app/config';
import { reconnectDelay, redisConnectionOptions } from './redis-connection';

/** How long the gateway's check waits for Redis: it starts without one (its triggers do not need Redis). */
export const GATEWAY_CHECK_WAIT_MS = 2_000;
/** The dialer's: it can do nothing without Redis, and waits a while for one restarted with it (loading its data). */
export const DIALER_CHECK_WAIT_MS = 30_000;

/**
 * Refuses to start on a REDIS_URL whose database number (`/16`) the Redis
 * server does not have. ioredis selects the database as it connects, and
 * when Redis refuses, it only emits an error and goes on in database 0:
 * a deployment told to keep apart from another on a shared Redis would
 * take that one's jobs. Checked on a connection of its own, before the
 * app's connections are made, trying for up to `waitMs` while Redis cannot
 * be reached or is loading its data; one that does not answer in that time
 * is not a configuration error, and is left to the app's own handling
 * (RedisClient logs a database refused on any later connection).
 */
export async function checkRedisDatabase(redisUrl: string, waitMs: number): Promise<void> {
  const { db, ...options } = redisConnectionOptions(redisUrl, 'producer');
  if (!db) return;
  const deadline = Date.now() + waitMs;
  for (let attempt = 1; Date.now() < deadline; attempt++) {
    const refusal = await selectOnce({ ...options, connectTimeout: Math.max(1, Math.min(2_000, deadline - Date.now())) }, db);
    if (refusal === null) return;
    if (refusal.name === 'ReplyError' && !refusal.message.startsWith('LOADING')) {
      throw new ConfigError([
        `REDIS_URL selects database ${db}, which this Redis refuses (${refusal.message}); ` +
          'pick one it has (0 to its `databases` setting less one, 0–15 by default), or keep deployments apart with QUEUE_PREFIX',
      ]);
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(reconnectDelay(attempt), Math.max(0, deadline - Date.now()))));
  }
}

/** One connection and SELECT: null when taken, else what failed (no connection, or Redis' refusal). */
async function selectOnce(options: ReturnType<typeof redisConnectionOptions>, db: number): Promise<Error | null> {
  const probe = new Redis({ ...options, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    await probe.select(db);
    return null;
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  } finally {
    probe.disconnect();
  }
}
