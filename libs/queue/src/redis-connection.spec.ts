import { Redis } from 'ioredis';
import { DEFAULT_REDIS_SOCKET_TIMEOUT_MS } from '@app/config';
import { MAX_RECONNECT_DELAY_MS, RECONNECT_JITTER_MS, reconnectDelay, redisConnectionOptions } from './redis-connection';

describe('redisConnectionOptions', () => {
  it('reads host, port, credentials, database and TLS from the URL', () => {
    expect(redisConnectionOptions('rediss://user:p%40ss@cache.internal:6380/3', 'worker')).toMatchObject({
      host: 'cache.internal',
      port: 6380,
      username: 'user',
      password: 'p@ss',
      db: 3,
      tls: {},
    });
    expect(redisConnectionOptions('redis://127.0.0.1:6379', 'producer')).toMatchObject({ host: '127.0.0.1', port: 6379, db: undefined, tls: undefined });
  });

  it('tries to reconnect at least every 2.2 s, however long Redis has been away, for producers and workers alike', () => {
    for (const role of ['producer', 'worker'] as const) expect(redisConnectionOptions('redis://127.0.0.1:6379', role).retryStrategy).toBe(reconnectDelay);
    const random = jest.spyOn(Math, 'random');
    try {
      random.mockReturnValue(0);
      expect([1, 2, 3, 5, 6, 7].map(reconnectDelay)).toEqual([50, 100, 200, 800, 1600, MAX_RECONNECT_DELAY_MS]);
      // BullMQ's own default waits 20 s between attempts from the tenth on.
      expect([10, 100, 10_000].map(reconnectDelay)).toEqual([MAX_RECONNECT_DELAY_MS, MAX_RECONNECT_DELAY_MS, MAX_RECONNECT_DELAY_MS]);
      random.mockReturnValue(0.9999);
      expect([1, 10_000].map(reconnectDelay)).toEqual([50 + RECONNECT_JITTER_MS - 1, MAX_RECONNECT_DELAY_MS + RECONNECT_JITTER_MS - 1]);
    } finally {
      random.mockRestore();
    }
    expect(MAX_RECONNECT_DELAY_MS + RECONNECT_JITTER_MS).toBe(2200);
  });

  it('gives up a connection that answers nothing for the socket timeout, past BullMQ\'s longest blocking wait', () => {
    for (const role of ['producer', 'worker'] as const) {
      expect(redisConnectionOptions('redis://127.0.0.1:6379', role, 20_000).socketTimeout).toBe(20_000);
      // Partial configurations (scripts, tests) get the default.
      expect(redisConnectionOptions('redis://127.0.0.1:6379', role).socketTimeout).toBe(DEFAULT_REDIS_SOCKET_TIMEOUT_MS);
    }
    expect(DEFAULT_REDIS_SOCKET_TIMEOUT_MS).toBeGreaterThan(11_000);
  });

  it('gives an IPv6 address bare, as a socket takes it', () => {
    expect(redisConnectionOptions('redis://[::1]:6379/0', 'worker')).toMatchObject({ host: '::1', port: 6379, db: 0 });
  });

  it('connects to ::1 itself, not a host named "[::1]": PONG where Redis listens on IPv6, else refused at ::1', async () => {
    // One of the two branches below asserts, whichever runs.
    expect.assertions(1);
    const redis = new Redis({ ...redisConnectionOptions('redis://[::1]:6379', 'producer'), lazyConnect: true });
    // connect() fails with "Connection is closed."; what the socket met is in the errors the client emits.
    const errors: Error[] = [];
    redis.on('error', (error: Error) => errors.push(error));
    try {
      await redis.connect();
      expect(await redis.ping()).toBe('PONG');
    } catch {
      // A machine whose Redis listens on IPv4 only refuses the connection; the address must still not be "[::1]"
      // (a name to look up, which fails with ENOTFOUND): the socket was refused at ::1 itself.
      // (EADDRNOTAVAIL or ENETUNREACH where the machine has no IPv6 loopback at all.)
      expect(errors[0]).toMatchObject({ code: expect.stringMatching(/^(ECONNREFUSED|EADDRNOTAVAIL|ENETUNREACH)$/), address: '::1', port: 6379 });
    } finally {
      redis.disconnect();
    }
  });
});
