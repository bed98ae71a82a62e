import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { Queue } from 'bullmq';
import { DataSource } from 'typeorm';
import { withTimeout } from '@app/common';
import { QueueName } from '@app/queue';

const PROBE_TIMEOUT_MS = 1000;

/**
 * Readiness probes of what both apps depend on: Postgres and Redis. The
 * answer is unauthenticated, on the API's public port: a failing probe says
 * only that its dependency did not answer, and the driver's error (hosts,
 * ports, the database user) goes to the log.
 */
@Injectable()
export class DependenciesHealth {
  private readonly logger = new Logger(DependenciesHealth.name);

  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly dataSource: DataSource,
    @InjectQueue(QueueName.Calls) private readonly queue: Queue,
  ) {}

  postgres(): Promise<HealthIndicatorResult> {
    return this.probe('postgres', () => this.dataSource.query('SELECT 1'));
  }

  redis(): Promise<HealthIndicatorResult> {
    return this.probe('redis', async () => {
      // A worker's connection queues commands while Redis is away, to send them when it returns: a probe sent then
      // would answer nothing and leave one more command behind it for every probe of the outage. Nor is one sent by
      // a probe that waited out its time for the first connection (Redis away since the start): it was answered.
      const asked = Date.now();
      const client = await this.queue.backend.client;
      if (client.status !== 'ready') throw new Error(`the Redis connection is ${client.status}`);
      if (Date.now() - asked >= PROBE_TIMEOUT_MS) throw new Error('the first connection to Redis came after the probe was answered');
      return this.queue.count();
    });
  }

  private async probe(name: string, ask: () => Promise<unknown>): Promise<HealthIndicatorResult> {
    const check = this.indicators.check(name);
    try {
      await withTimeout(ask(), PROBE_TIMEOUT_MS, `${name} probe`);
      return check.up();
    } catch (error) {
      this.logger.warn({ dependency: name, err: error }, 'readiness probe failed');
      return check.down({ message: `${name} did not answer (the reason is in the log)` });
    }
  }
}
