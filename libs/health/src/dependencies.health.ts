import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { Queue } from 'bullmq';
import { DataSource } from 'typeorm';
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
      await withTimeout(this.dataSource.query('SELECT 1'));
      return check.up();
    } catch (error) {
      return check.down({ message: (error as Error).message });
    }
  }

  async redis(): Promise<HealthIndicatorResult> {
    const check = this.indicators.check('redis');
    try {
      await withTimeout(this.queue.count());
      return check.up();
    } catch (error) {
      return check.down({ message: (error as Error).message });
    }
  }
}

function withTimeout<T>(promise: Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
