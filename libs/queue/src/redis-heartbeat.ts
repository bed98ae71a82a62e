import { BeforeApplicationShutdown, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { InjectQueue } from '@nestjs/bullmq';
import { Queue, Worker } from 'bullmq';
import { QueueName } from './queue-names';
import { RedisClient } from './redis-client';

/** How often each of the app's Redis connections that answers commands at once is sent a PING. */
export const HEARTBEAT_INTERVAL_MS = 5_000;

/** What the heartbeat needs of an ioredis connection. */
export interface PingableConnection {
  readonly status: string;
  ping(): Promise<unknown>;
}

/**
 * Sends a PING every HEARTBEAT_INTERVAL_MS on each of the app's Redis
 * connections that carries ordinary commands: its own RedisClient, the
 * queues' and the workers' (a worker's blocking connection has BullMQ's own
 * watchdog). A connection gives itself up only once a command has waited on
 * it REDIS_SOCKET_TIMEOUT_MS without an answer; an idle one that went silent
 * would be found only when next used, so a dialer with nothing to do found
 * its silent connections one after another, as each step of its first job
 * reached the next, up to a minute and more. With a PING on each they are
 * all found at once, within the interval and the timeout, before a call
 * needs them. One PING waits unanswered per connection at most.
 */
@Injectable()
export class RedisHeartbeat implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly connections = new Set<PingableConnection>();
  private readonly unanswered = new Set<PingableConnection>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    client: RedisClient,
    @InjectQueue(QueueName.Calls) calls: Queue,
    @InjectQueue(QueueName.CallEvents) callEvents: Queue,
  ) {
    this.add(client.redis);
    this.watch(calls);
    this.watch(callEvents);
  }

  /** Pings this queue's or worker's connection for ordinary commands too, once BullMQ has made it. */
  watch(owner: Queue | Worker): void {
    // An ioredis connection; BullMQ types it by the few commands its backends share.
    (owner.getBackend().client as Promise<unknown> as Promise<PingableConnection>).then(
      (connection) => this.add(connection),
      // Never made (closed first): nothing to ping.
      () => undefined,
    );
  }

  add(connection: PingableConnection): void {
    this.connections.add(connection);
  }

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => this.beat(), HEARTBEAT_INTERVAL_MS);
    this.timer.unref();
  }

  beforeApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One PING on each ready connection whose last one was answered. */
  beat(): void {
    for (const connection of this.connections) {
      if (connection.status !== 'ready' || this.unanswered.has(connection)) continue;
      this.unanswered.add(connection);
      // A refusal is the connection's own to report: it logs and reconnects through its error events.
      connection
        .ping()
        .catch(() => undefined)
        .finally(() => this.unanswered.delete(connection));
    }
  }
}
