import { RedisOptions } from 'bullmq';
import { DEFAULT_REDIS_SOCKET_TIMEOUT_MS } from '@app/config';

/** The longest wait between two attempts to reconnect to Redis, before its jitter. */
export const MAX_RECONNECT_DELAY_MS = 2_000;
/** Up to this much more, at random, so that the dialers do not all come back in the same instant. */
export const RECONNECT_JITTER_MS = 200;

/**
 * The wait before the `attempt`th attempt to reconnect (counted from 1 since
 * the connection was last ready): 50 ms, doubling each time up to 2 s, and
 * 0–200 ms of jitter. ioredis' own default has this shape up to 5 s; BullMQ
 * replaces it for its connections with 1 s at least, growing to 20 s from
 * the tenth attempt (about 18 s into an outage). With BullMQ's, after an
 * outage of half a minute (a restart that loads a large AOF, a failover),
 * a dialer could wait another 20 s before it took jobs again.
 */
export function reconnectDelay(attempt: number): number {
  return Math.min(50 * 2 ** Math.max(attempt - 1, 0), MAX_RECONNECT_DELAY_MS) + Math.floor(Math.random() * RECONNECT_JITTER_MS);
}

/**
 * Connection options for BullMQ. Producers fail fast while Redis is away
 * (no offline queue); workers wait for it and retry forever. Both try to
 * reconnect at least every 2.2 s (`reconnectDelay`), and give up a
 * connection that has answered nothing for `socketTimeoutMs` while commands
 * wait on it (REDIS_SOCKET_TIMEOUT_MS): one closed by neither side would
 * otherwise hold its commands until the kernel gave up retransmitting them,
 * about 15 minutes. Its commands fail, or for a worker are sent again on
 * the new connection, as when Redis restarts.
 */
export function redisConnectionOptions(
  redisUrl: string,
  role: 'producer' | 'worker',
  socketTimeoutMs: number = DEFAULT_REDIS_SOCKET_TIMEOUT_MS,
): RedisOptions {
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
    socketTimeout: socketTimeoutMs,
  };
  if (role === 'producer') {
    options.enableOfflineQueue = false;
    options.maxRetriesPerRequest = 1;
    options.connectTimeout = 2000;
  }
  return options;
}
