import { RedisOptions } from 'bullmq';

/**
 * Connection options for BullMQ. Producers fail fast while Redis is away
 * (no offline queue); workers wait for it and retry forever.
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
  };
  if (role === 'producer') {
    options.enableOfflineQueue = false;
    options.maxRetriesPerRequest = 1;
    options.connectTimeout = 2000;
  }
  return options;
}
