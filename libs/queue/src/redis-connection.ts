import { RedisOptions } from 'bullmq';

/** The longest wait between two attempts to reconnect to Redis. */
export const MAX_RECONNECT_DELAY_MS = 2_000;

/**
 * The wait before the `attempt`th attempt to reconnect: 50 ms more each
 * time, at most 2 s (ioredis' own default, written out because BullMQ's
 * default for its connections grows to 20 s). With BullMQ's, a connection
 * that failed a dozen attempts, over a Redis outage of ten seconds or a few
 * short ones in a row, waited up to 20 s after Redis was back: a dialer took
 * no jobs meanwhile, and one asked to stop waited out its whole grace.
 */
export function reconnectDelay(attempt: number): number {
  return Math.min(attempt * 50, MAX_RECONNECT_DELAY_MS);
}

/**
 * Connection options for BullMQ. Producers fail fast while Redis is away
 * (no offline queue); workers wait for it and retry forever. Both try to
 * reconnect at least every 2 s (`reconnectDelay`).
 */
export function redisConnectionOptions(redisUrl: string, role: 'producer' | 'worker'): RedisOptions {
  const url = new URL(redisUrl);
  const options: RedisOptions = {
    // An IPv6 address comes bracketed in a URL ([::1]), and bare to a socket.
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: Number(url.port || 6379),
    username: url.username ? decodeURIComponent(url.username) : undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    db: url.pathname.length > 1 ? Number(url.pathname.slice(1)) : undefined,
    tls: url.protocol === 'rediss:' ? {} : undefined,
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    retryStrategy: reconnectDelay,
  };
  if (role === 'producer') {
    options.enableOfflineQueue = false;
    options.maxRetriesPerRequest = 1;
    options.connectTimeout = 2000;
  }
  return options;
}
