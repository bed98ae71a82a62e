import { Injectable, OnApplicationShutdown } from '@nestjs/common';
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
 * harmless. (With the offline queue on, as the dialer's, ioredis ends a
 * connection that waits to reconnect on QUIT itself.)
 */
@Injectable()
export class QueueConnectionsShutdown implements OnApplicationShutdown {
  constructor(
    @InjectQueue(QueueName.Calls) private readonly calls: Queue,
    @InjectQueue(QueueName.CallEvents) private readonly callEvents: Queue,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(
      [this.calls, this.callEvents].map(async (queue) => {
        // The client answers once the connection was first made. One never made, BullMQ's close ends itself: it
        // disconnects a connection still initializing rather than sending QUIT.
        const client = await withTimeout(queue.getBackend().client, CONNECTION_WAIT_MS, 'the queue connection').catch(() => null);
        if (client && client.status !== 'end') client.disconnect();
      }),
    );
  }
}
