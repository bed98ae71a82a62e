import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectQueue } from '@nestjs/bullmq';
import { Queue } from 'bullmq';
import { LogLimiter } from '@app/common';
import { QueueName } from './queue-names';

/** One line per source at most this often; the errors between are counted into the next. */
export const CONNECTION_ERROR_LOG_INTERVAL_MS = 10_000;

interface ErrorSource {
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/**
 * Logs a BullMQ queue's or worker's connection errors through the app's
 * logger, one line per CONNECTION_ERROR_LOG_INTERVAL_MS at most. Without a
 * listener BullMQ prints every error, stack and all, to stderr, outside the
 * JSON logs: several a second per connection while Redis is away.
 */
export function logConnectionErrors(source: ErrorSource, name: string, logger: Logger, now: () => number = Date.now): void {
  const limiter = new LogLimiter(CONNECTION_ERROR_LOG_INTERVAL_MS, now);
  source.on('error', (error) => {
    const unlogged = limiter.admit();
    if (unlogged !== null) logger.warn({ err: error, source: name, errors_since_last_line: unlogged }, 'Redis connection error; BullMQ reconnects by itself');
  });
}

/** The producers' queues' connection errors, logged (`logConnectionErrors`). */
@Injectable()
export class QueueConnectionErrors implements OnModuleInit {
  private readonly logger = new Logger('BullMQ');

  constructor(
    @InjectQueue(QueueName.Calls) private readonly calls: Queue,
    @InjectQueue(QueueName.CallEvents) private readonly callEvents: Queue,
  ) {}

  onModuleInit(): void {
    logConnectionErrors(this.calls, `queue ${QueueName.Calls}`, this.logger);
    logConnectionErrors(this.callEvents, `queue ${QueueName.CallEvents}`, this.logger);
  }
}
