import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { Queue } from 'bullmq';
import { DataSource } from 'typeorm';
import { withTimeout } from '@app/common';
import { QueueName } from '@app/queue';

const PROBE_TIMEOUT_MS = 1000;

/** Readiness probes of what both apps depend on: Postgres and Redis. */
@Injectable()
export class DependenciesHealth {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly dataSource: DataSource,
    @InjectQueue(QueueName.Calls) private readonly queue: Queue,
  ) {}

  async postgres(): Promise<HealthIndicatorResult> {
    const check = this.indicators.check('postgres');
    try {
      await withTimeout(this.dataSource.query('SELECT 1'), PROBE_TIMEOUT_MS, 'postgres probe');
      return check.up();
    } catch (error) {
      return check.down({ message: (error as Error).message });
    }
  }

  async redis(): Promise<HealthIndicatorResult> {
    const check = this.indicators.check('redis');
    try {
      await withTimeout(this.queue.count(), PROBE_TIMEOUT_MS, 'redis probe');
      return check.up();
    } catch (error) {
      return check.down({ message: (error as Error).message });
    }
  }
}
