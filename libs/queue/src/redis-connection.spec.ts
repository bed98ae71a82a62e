import { Redis } from 'ioredis';
import { redisConnectionOptions } from './redis-connection';

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

  it('gives an IPv6 address bare, as a socket takes it', () => {
    expect(redisConnectionOptions('redis://[::1]:6379/0', 'worker')).toMatchObject({ host: '::1', port: 6379, db: 0 });
  });

  it('connects over IPv6 to the local Redis', async () => {
    const redis = new Redis({ ...redisConnectionOptions('redis://[::1]:6379', 'producer'), lazyConnect: true });
    redis.on('error', () => undefined);
    try {
      await redis.connect();
      expect(await redis.ping()).toBe('PONG');
    } catch (error) {
      // A machine whose Redis listens on IPv4 only refuses the connection; the address must still not be "[::1]".
      expect(String(error)).toMatch(/ECONNREFUSED ::1|connect ECONNREFUSED/);
    } finally {
      redis.disconnect();
    }
  });
});
