import { Queue } from 'bullmq';
import { PingableConnection, RedisHeartbeat } from './redis-heartbeat';
import { RedisClient } from './redis-client';

/** A connection whose PINGs are answered (or refused) when the test says. */
class FakeConnection implements PingableConnection {
  pings = 0;
  private readonly answers: Array<(refused?: Error) => void> = [];

  constructor(public status: string) {}

  ping(): Promise<unknown> {
    this.pings += 1;
    return new Promise((resolve, reject) => this.answers.push((refused) => (refused ? reject(refused) : resolve('PONG'))));
  }

  answer(refused?: Error): void {
    this.answers.shift()!(refused);
  }
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

function heartbeatOver(own: FakeConnection, queueConnections: FakeConnection[]): RedisHeartbeat {
  const queues = queueConnections.map((connection) => ({ getBackend: () => ({ client: Promise.resolve(connection) }) }) as unknown as Queue);
  return new RedisHeartbeat({ redis: own } as unknown as RedisClient, queues[0], queues[1]);
}

describe('RedisHeartbeat', () => {
  it("pings the app's own connection and each queue's, once BullMQ has made them", async () => {
    const own = new FakeConnection('ready');
    const calls = new FakeConnection('ready');
    const events = new FakeConnection('ready');
    const heartbeat = heartbeatOver(own, [calls, events]);
    await flush();
    heartbeat.beat();
    expect([own.pings, calls.pings, events.pings]).toEqual([1, 1, 1]);
  });

  it("pings a worker's connection once it is watched", async () => {
    const heartbeat = heartbeatOver(new FakeConnection('ready'), [new FakeConnection('ready'), new FakeConnection('ready')]);
    const worker = new FakeConnection('ready');
    heartbeat.watch({ getBackend: () => ({ client: Promise.resolve(worker) }) } as unknown as Queue);
    await flush();
    heartbeat.beat();
    expect(worker.pings).toBe(1);
  });

  it('leaves alone a connection that is not ready, and one whose last PING is unanswered, until it is answered', async () => {
    const own = new FakeConnection('ready');
    const reconnecting = new FakeConnection('reconnecting');
    const heartbeat = heartbeatOver(own, [reconnecting, new FakeConnection('ready')]);
    await flush();
    heartbeat.beat();
    heartbeat.beat();
    expect(own.pings).toBe(1);
    expect(reconnecting.pings).toBe(0);

    own.answer();
    await flush();
    heartbeat.beat();
    expect(own.pings).toBe(2);
    // A refused PING is the connection's own to report; the next beat pings again.
    own.answer(new Error('Socket timeout'));
    await flush();
    heartbeat.beat();
    expect(own.pings).toBe(3);
  });

  it('ignores a queue whose connection was never made', async () => {
    const own = new FakeConnection('ready');
    const never = { getBackend: () => ({ client: Promise.reject(new Error('Connection is closed.')) }) } as unknown as Queue;
    const heartbeat = new RedisHeartbeat({ redis: own } as unknown as RedisClient, never, never);
    await flush();
    heartbeat.beat();
    expect(own.pings).toBe(1);
  });

  it('beats on its interval from bootstrap until shutdown begins', async () => {
    jest.useFakeTimers();
    try {
      const own = new FakeConnection('ready');
      const heartbeat = heartbeatOver(own, [new FakeConnection('ready'), new FakeConnection('ready')]);
      heartbeat.onApplicationBootstrap();
      jest.advanceTimersByTime(5_000);
      expect(own.pings).toBe(1);
      own.answer();
      await Promise.resolve();
      await Promise.resolve();
      heartbeat.beforeApplicationShutdown();
      jest.advanceTimersByTime(20_000);
      expect(own.pings).toBe(1);
    } finally {
      jest.useRealTimers();
    }
  });
});
