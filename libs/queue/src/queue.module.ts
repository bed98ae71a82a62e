import { BullModule } from '@nestjs/bullmq';
import { DynamicModule, Module } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { CallEventsQueue } from './call-events.queue';
import { CallsQueue } from './calls.queue';
import { ConcurrencyLimiter } from './concurrency-limiter';
import { DialBacklogs } from './dial-backlogs';
import { QueueConnectionErrors } from './connection-errors';
import { QueueConnectionsShutdown } from './queue-connections-shutdown';
import { PacingInstants } from './pacing-instants';
import { QueueName } from './queue-names';
import { RedisClient } from './redis-client';
import { redisConnectionOptions } from './redis-connection';
import { RedisHeartbeat } from './redis-heartbeat';

/**
 * Registers BullMQ with the configured Redis and hash-tag prefix, and the
 * typed producers of every queue. `role` picks the connection behaviour.
 */
@Module({})
export class QueueModule {
  static forRoot(role: 'producer' | 'worker'): DynamicModule {
    return {
      module: QueueModule,
      global: true,
      imports: [
        BullModule.forRootAsync({
          inject: [APP_CONFIG],
          useFactory: (config: AppConfig) => ({
            connection: redisConnectionOptions(config.redisUrl, role, config.redisSocketTimeoutMs),
            prefix: config.queuePrefix,
          }),
        }),
        BullModule.registerQueue({ name: QueueName.Calls }, { name: QueueName.CallEvents }),
      ],
      providers: [
        CallsQueue,
        CallEventsQueue,
        { provide: RedisClient, inject: [APP_CONFIG], useFactory: (config: AppConfig) => new RedisClient(config, role) },
        PacingInstants,
        ConcurrencyLimiter,
        DialBacklogs,
        QueueConnectionErrors,
        QueueConnectionsShutdown,
        RedisHeartbeat,
      ],
      exports: [BullModule, CallsQueue, CallEventsQueue, RedisClient, PacingInstants, ConcurrencyLimiter, DialBacklogs, RedisHeartbeat],
    };
  }
}
