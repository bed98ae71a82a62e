import Redis, { RedisOptions } from 'ioredis';
import { failureOf } from '../../../test/support/failure-of';
import { freePort } from '../../../test/support/free-port';
import { closeLoopbackServer, LoopbackServer, loopbackServer } from '../../../test/support/loopback-server';
import { testConfig } from '../../../test/support/test-config';
import { testRunResources } from '../../../test/support/test-run-id';
import { waitFor } from '../../../test/support/wait-for';
import { isRedisUnavailable } from './redis-unavailable';

const failure = async (attempt: () => Promise<unknown>) => (await failureOf(attempt)) as Error;

/** Real failures of ioredis and of a real Redis server, not shapes: what the filter meets. */
describe('isRedisUnavailable', () => {
  const clients: Redis[] = [];
  const client = (options: RedisOptions): Redis => {
    const redis = new Redis({ host: '127.0.0.1', retryStrategy: () => 50, disconnectTimeout: 100, ...options });
    redis.on('error', () => undefined);
    clients.push(redis);
    return redis;
  };
  /** Accepts connections and never answers a byte. */
  let silent: LoopbackServer;

  beforeAll(async () => {
    silent = await loopbackServer();
  });
  afterEach(() => {
    for (const redis of clients.splice(0)) redis.disconnect();
    for (const socket of silent.sockets) socket.destroy();
    silent.sockets.clear();
  });
  afterAll(() => closeLoopbackServer(silent));

  it("takes a command refused for want of a connection, with the gateway's fail-fast options", async () => {
    const redis = client({ port: await freePort(), enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    const error = await failure(() => redis.ping());
    expect(error.message).toMatch(/Stream isn't writeable/);
    expect(isRedisUnavailable(error)).toBe(true);
  });

  it('takes a command whose retries are spent while Redis is away', async () => {
    const redis = client({ port: await freePort(), maxRetriesPerRequest: 1 });
    const error = await failure(() => redis.ping());
    expect(error.name).toBe('MaxRetriesPerRequestError');
    expect(isRedisUnavailable(error)).toBe(true);
  });

  it('takes a command a server never answered within its timeout', async () => {
    const redis = client({ port: silent.port, commandTimeout: 100, enableReadyCheck: false, maxRetriesPerRequest: 0 });
    const error = await failure(() => redis.ping());
    expect(error.message).toMatch(/Command timed out/);
    expect(isRedisUnavailable(error)).toBe(true);
  });

  it('takes a command cut off with its connection, when the client does not reconnect', async () => {
    const redis = client({ port: silent.port, enableReadyCheck: false, retryStrategy: () => null });
    const pending = failure(() => redis.ping());
    await waitFor(async () => (silent.sockets.size > 0 ? true : undefined), { what: 'the connection to the silent server' });
    for (const socket of silent.sockets) socket.destroy();
    const error = await pending;
    expect(error.message).toMatch(/Connection is closed/);
    expect(isRedisUnavailable(error)).toBe(true);
  });

  describe('replies of a real Redis server', () => {
    let redis: Redis;
    beforeEach(() => {
      const url = new URL(testConfig().redisUrl);
      redis = client({ host: url.hostname, port: Number(url.port || 6379) });
    });
    /** The reply a server gives in that state, as Redis itself writes it, raised by a script. */
    const replyOf = (text: string) => failure(() => redis.eval(`return redis.error_reply(ARGV[1])`, 0, text));

    it.each([
      ['loading after a restart', 'LOADING Redis is loading the dataset in memory'],
      ['a replica since a failover', "READONLY You can't write against a read only replica."],
      ['a script holding it', 'BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.'],
      ['out of its memory', "OOM command not allowed when used memory > 'maxmemory'."],
      ['refusing writes since a save failed', 'MISCONF Redis is configured to save RDB snapshots, but it is currently not able to persist on disk.'],
    ])('takes %s', async (_state, text) => {
      const error = await replyOf(text);
      expect(error.name).toBe('ReplyError');
      expect(isRedisUnavailable(error)).toBe(true);
    });

    it('leaves a command that is wrong: an unknown one, a wrong type, a script error', async () => {
      const key = `${testRunResources().queuePrefix}-redis-unavailable-string`;
      await redis.set(key, 'x', 'PX', 10_000);
      const failures = await Promise.all([
        failure(() => redis.call('NO-SUCH-COMMAND')),
        failure(() => redis.hget(key, 'field')),
        failure(() => redis.eval('return nosuch.call()', 0)),
      ]);
      expect(failures.map((error) => error.name)).toEqual(['ReplyError', 'ReplyError', 'ReplyError']);
      for (const error of failures) expect(isRedisUnavailable(error)).toBe(false);
    });
  });

  it("leaves errors that are not Redis' own, and values that are not errors", () => {
    expect(isRedisUnavailable(new Error('connect ECONNREFUSED 127.0.0.1:5432'))).toBe(false);
    // Only a reply of Redis is read by its first word.
    expect(isRedisUnavailable(new Error('READONLY mode is on'))).toBe(false);
    expect(isRedisUnavailable(undefined)).toBe(false);
    expect(isRedisUnavailable('Connection is closed')).toBe(false);
  });
});
