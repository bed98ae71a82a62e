import { Logger } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { ChildProcess, spawn } from 'node:child_process';
import { DataSource } from 'typeorm';
import { redisConnectionOptions } from '@app/queue/redis-connection';
import { freePort } from '../../../test/support/free-port';
import { TcpProxy } from '../../../test/support/tcp-proxy';
import { testRunResources } from '../../../test/support/test-run-id';
import { waitFor } from '../../../test/support/wait-for';
import { DependenciesHealth } from './dependencies.health';

describe('the Redis readiness probe on a worker connection', () => {
  const proxy = new TcpProxy('127.0.0.1', 6379);
  let queue: Queue;
  let health: DependenciesHealth;

  beforeAll(async () => {
    const port = await proxy.start();
    // The dialer's connection: the offline queue on, retrying forever.
    queue = new Queue('health-probe', {
      connection: redisConnectionOptions(`redis://127.0.0.1:${port}`, 'worker'),
      prefix: testRunResources().queuePrefix,
    });
    health = new DependenciesHealth(new HealthIndicatorService(), {} as DataSource, queue);
  });

  afterAll(async () => {
    await proxy.restore();
    await queue.close();
    await proxy.stop();
  });

  it('is up with Redis there, and down without sending a command while the connection is away', async () => {
    expect((await health.redis()).redis).toEqual({ status: 'up' });

    const client = await queue.backend.client;
    await proxy.cut();
    await waitFor(async () => (client.status === 'ready' ? undefined : client.status), { what: 'the connection to drop' });
    // On the ioredis class: BullMQ hands out a proxy of its client, which a spy on the instance would not see through.
    const sent = jest.spyOn(Redis.prototype, 'sendCommand');
    const logged = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      for (let probe = 0; probe < 3; probe += 1) {
        expect((await health.redis()).redis).toMatchObject({ status: 'down', message: 'redis did not answer (the reason is in the log)' });
      }
      // Each would have waited in the offline queue, to run once Redis is back.
      expect(sent).not.toHaveBeenCalled();
      expect(logged).toHaveBeenCalledWith({ dependency: 'redis', err: expect.objectContaining({ message: expect.stringMatching(/^the Redis connection is /) }) }, 'readiness probe failed');
    } finally {
      jest.restoreAllMocks();
    }

    await proxy.restore();
    await waitFor(async () => (client.status === 'ready' ? true : undefined), { what: 'the connection to return' });
    expect((await health.redis()).redis).toEqual({ status: 'up' });
  });

  it('sends nothing for the probes that ran out of time while Redis was away from the start, once it comes', async () => {
    const late = new TcpProxy('127.0.0.1', 6379);
    const port = await late.start();
    await late.cut();
    const startedAway = new Queue('health-probe-boot', {
      connection: redisConnectionOptions(`redis://127.0.0.1:${port}`, 'worker'),
      prefix: testRunResources().queuePrefix,
    });
    startedAway.on('error', () => undefined);
    const probe = new DependenciesHealth(new HealthIndicatorService(), {} as DataSource, startedAway);
    // The probe's one command is its write; the connection's own (its hello, its name) are not counted.
    const sent = jest.spyOn(Redis.prototype, 'sendCommand');
    const probesSent = () => sent.mock.calls.filter(([command]) => command.name.toLowerCase() === 'set').length;
    const logged = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      for (let attempt = 0; attempt < 2; attempt += 1) expect((await probe.redis()).redis).toMatchObject({ status: 'down' });
      expect(logged).toHaveBeenCalledTimes(2);
      await late.restore();
      const client = await startedAway.backend.client;
      await waitFor(async () => (client.status === 'ready' ? true : undefined), { what: 'the first connection' });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(probesSent()).toBe(0);
      expect((await probe.redis()).redis).toEqual({ status: 'up' });
      expect(probesSent()).toBe(1);
    } finally {
      jest.restoreAllMocks();
      await startedAway.close();
      await late.stop();
    }
  });
});

describe('the Redis readiness probe on a Redis that answers reads but refuses writes', () => {
  let server: ChildProcess;
  let port: number;
  let admin: Redis;
  let queue: Queue;
  let health: DependenciesHealth;

  beforeAll(async () => {
    port = await freePort();
    // A Redis of its own: its memory limit is changed below, which the shared one's other users must not see.
    server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    admin = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => 100 });
    await waitFor(async () => (await admin.ping().catch(() => undefined)) === 'PONG' || undefined, { what: 'the Redis of its own to start' });
    queue = new Queue('health-probe-oom', { connection: redisConnectionOptions(`redis://127.0.0.1:${port}`, 'worker'), prefix: testRunResources().queuePrefix });
    health = new DependenciesHealth(new HealthIndicatorService(), {} as DataSource, queue);
  });

  afterAll(async () => {
    await queue.close();
    await admin.quit();
    server.kill('SIGKILL');
  });

  it('is down while Redis is out of memory under noeviction, though a read-only script still runs, and up once it has room', async () => {
    expect((await health.redis()).redis).toEqual({ status: 'up' });
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    await admin.config('SET', 'maxmemory', '1');
    const logged = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      // What the probe asked before: a count of jobs, a script that only reads, which Redis still runs.
      await expect(queue.count()).resolves.toBe(0);
      expect((await health.redis()).redis).toEqual({ status: 'down', message: 'redis takes no writes (the reason is in the log)' });
      expect(logged).toHaveBeenCalledWith({ dependency: 'redis', err: expect.objectContaining({ message: expect.stringMatching(/^OOM /) }) }, 'readiness probe failed');
    } finally {
      jest.restoreAllMocks();
      await admin.config('SET', 'maxmemory', '0');
    }
    expect((await health.redis()).redis).toEqual({ status: 'up' });
  });
});

describe('the Postgres readiness probe', () => {
  const probeWith = (options?: string) =>
    new DataSource({ type: 'postgres', url: testRunResources().databaseUrl, poolSize: 1, ...(options ? { extra: { options } } : {}) });
  const sources: DataSource[] = [];

  afterAll(async () => {
    for (const source of sources) if (source.isInitialized) await source.destroy();
  });

  it('is up on a database that takes writes, and down on one that answers a SELECT but takes none (as a standby)', async () => {
    const writable = probeWith();
    // Read-only for its own connections only, as a hot standby is for all: no other test's database is touched.
    const readOnly = probeWith('-c default_transaction_read_only=on');
    sources.push(writable, readOnly);
    await writable.initialize();
    await readOnly.initialize();
    expect((await new DependenciesHealth(new HealthIndicatorService(), writable, {} as Queue).postgres()).postgres).toEqual({ status: 'up' });

    await expect(readOnly.query('SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
    await expect(readOnly.query('CREATE TABLE readiness_probe_write (id int)')).rejects.toMatchObject({ code: '25006' });
    const logged = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const probe = new DependenciesHealth(new HealthIndicatorService(), readOnly, {} as Queue);
      expect((await probe.postgres()).postgres).toEqual({ status: 'down', message: 'postgres takes no writes (the reason is in the log)' });
      expect(logged).toHaveBeenCalledWith({ dependency: 'postgres', err: expect.objectContaining({ message: 'transaction_read_only is on' }) }, 'readiness probe failed');
    } finally {
      jest.restoreAllMocks();
    }
  });

  it('asks a Postgres that does not answer once, however many probes come meanwhile, and again once it answered', async () => {
    let answer: (rows: unknown) => void = () => undefined;
    // A statement that hangs (a Postgres that stopped answering), holding its pool connection until it gives up.
    const query = jest.fn(() => new Promise((resolve) => (answer = resolve)));
    const probe = new DependenciesHealth(new HealthIndicatorService(), { query } as unknown as DataSource, {} as Queue);
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const probes = await Promise.all([probe.postgres(), probe.postgres(), probe.postgres()]);
      for (const result of probes) expect(result.postgres).toEqual({ status: 'down', message: 'postgres did not answer (the reason is in the log)' });
      // Past its time, the question still hangs: a later probe waits on it too.
      expect((await probe.postgres()).postgres).toMatchObject({ status: 'down' });
      expect(query).toHaveBeenCalledTimes(1);

      answer([{ transaction_read_only: 'off' }]);
      await new Promise((resolve) => setImmediate(resolve));
      const next = probe.postgres();
      answer([{ transaction_read_only: 'off' }]);
      expect((await next).postgres).toEqual({ status: 'up' });
      expect(query).toHaveBeenCalledTimes(2);
    } finally {
      jest.restoreAllMocks();
    }
  });
});
