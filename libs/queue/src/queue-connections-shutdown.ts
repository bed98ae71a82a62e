import { BeforeApplicationShutdown, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { InjectQueue } from '@nestjs/bullmq';
import { Queue } from 'bullmq';
import { withTimeout } from '@app/common';
import { QueueName } from './queue-names';

/** How long the shutdown waits for a queue's connection to have been made at all. */
const CONNECTION_WAIT_MS = 1_000;

/**
 * Ends the queues' own Redis connections at shutdown, after BullMQ's close
 * (this module is global, so its hooks run last). BullMQ closes a queue's
 * connection with QUIT, which ioredis refuses without sending while the
 * connection waits to reconnect and the offline queue is off (the gateway's
 * producers): the connection then goes on reconnecting for ever, and its
 * timer holds the process open. Ending a connection BullMQ did close is
 * harmless.
 *
 * With the offline queue on (the dialer's), ioredis ends a connection that
 * waits to reconnect on QUIT only when no command waits in that queue;
 * otherwise QUIT waits behind them, and BullMQ's close with it, until Redis
 * is back (a reaper's job look-up or a dispatcher's enqueue made while
 * Redis was away). So before any close, once the dialer's workers have
 * stopped (`WorkerShutdown`, whose hook runs first), a connection that is
 * not up is ended, and what waits in it refused (`endConnection`).
 */
@Injectable()
export class QueueConnectionsShutdown implements BeforeApplicationShutdown, OnApplicationShutdown {
  constructor(
    @InjectQueue(QueueName.Calls) private readonly calls: Queue,
    @InjectQueue(QueueName.CallEvents) private readonly callEvents: Queue,
  ) {}

  async beforeApplicationShutdown(): Promise<void> {
    // Only where commands can wait: a connection without an offline queue (the gateway's) refuses them at once.
    const waiting = (await this.clients()).filter((client) => client.options.enableOfflineQueue !== false && client.status !== 'ready');
    await Promise.all(waiting.map((client) => endConnection(client)));
  }

  async onApplicationShutdown(): Promise<void> {
    for (const client of await this.clients()) if (client.status !== 'end') client.disconnect();
  }

  /**
   * The queues' connections. A client answers once its connection was first
   * made; one never made, BullMQ's close ends itself: it disconnects a
   * connection still initializing rather than sending QUIT.
   */
  private async clients(): Promise<RedisConnection[]> {
    const clients = await Promise.all(
      [this.calls, this.callEvents].map((queue) =>
        withTimeout(queue.getBackend().client, CONNECTION_WAIT_MS, 'the queue connection').catch(() => null),
      ),
    );
    return clients.filter((client): client is RedisConnection => client !== null);
  }
}

type RedisConnection = Awaited<ReturnType<Queue['getBackend']>['client']>;

/** Longer than the longest wait between two reconnection attempts (`reconnectDelay`: 2 s and its jitter). */
const NEXT_ATTEMPT_WAIT_MS = 3_000;

/**
 * Ends a connection and refuses the commands waiting in it. One waiting
 * between two attempts to reconnect is ended as its next attempt begins:
 * ended in that wait, ioredis only clears its timer, and keeps its status
 * and its waiting commands for ever (no socket is left whose close would
 * refuse them). Ended in an attempt, it refuses them and ends. One whose
 * next attempt does not begin within `waitMs` is ended all the same, its
 * waiting commands kept: the app's close deadline (`closeOnSignal`) is then
 * what ends the process.
 */
export async function endConnection(client: RedisConnection, waitMs = NEXT_ATTEMPT_WAIT_MS): Promise<void> {
  if (client.status === 'end') return;
  if (client.status === 'reconnecting') {
    await new Promise<void>((resolve) => {
      const attempting = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        client.off('connecting', attempting);
        resolve();
      }, waitMs);
      client.once('connecting', attempting);
    });
  }
  client.disconnect();
}
