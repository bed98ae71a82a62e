import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Logger as PinoLogger } from 'pino';
import { PinoNestLogger } from '@app/common';
import { AppConfig } from '@app/config';
import { checkRedisDatabase, DIALER_CHECK_WAIT_MS } from '@app/queue';
import { DialerModule } from './dialer.module';

/** Builds the dialer: BullMQ workers plus a health-only HTTP listener. */
export async function createDialerApp(config: AppConfig, logger: PinoLogger): Promise<NestFastifyApplication> {
  await checkRedisDatabase(config.redisUrl, DIALER_CHECK_WAIT_MS);
  const app = await NestFactory.create<NestFastifyApplication>(
    DialerModule.forRoot(config),
    new FastifyAdapter({ loggerInstance: logger }),
    { logger: new PinoNestLogger(logger), abortOnError: false },
  );
  return app;
}
