import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '@app/config';
import { RedisClient } from '@app/queue';
import { PeriodicTask } from './periodic-task';

/** Expired keys one statement deletes: a short statement, its rows locked briefly. */
export const SWEEP_BATCH = 5_000;
/** Statements one round sends at most; what is left is the next round's. */
export const SWEEP_BATCHES_PER_ROUND = 20;

/**
 * Deletes Idempotency-Keys past their 24 hours, on a task of its own. Run at
 * the end of the reaper's round, it fell behind whenever rounds were slow (a
 * carrier slow to answer its look-ups, for minutes a round): the table grew
 * without bound under sustained keyed traffic. Each round deletes until it
 * finds fewer than SWEEP_BATCH, up to SWEEP_BATCHES_PER_ROUND statements
 * (100,000 keys, over 20 million an hour at the default interval).
 *
 * Rows a trigger request holds (taking over an expired key, in key order)
 * are skipped, not waited for: the sweeper never waits on the intake, so the
 * two cannot deadlock, and a skipped key is deleted in a later round if it
 * is still expired.
 */
@Injectable()
export class IdempotencyKeySweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(IdempotencyKeySweeper.name);
  private readonly task: PeriodicTask;

  constructor(
    private readonly dataSource: DataSource,
    client: RedisClient,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.task = new PeriodicTask('idempotency-key-sweeper', config.reaperIntervalMs, client, (stopping) => this.sweep(stopping).then(() => undefined));
  }

  onApplicationBootstrap(): void {
    this.task.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.task.stop();
  }

  /** One round; answers how many keys it deleted. */
  async sweep(stopping?: AbortSignal): Promise<number> {
    let deleted = 0;
    for (let batch = 0; batch < SWEEP_BATCHES_PER_ROUND && !stopping?.aborted; batch++) {
      const [, count]: [unknown, number] = await this.dataSource.query(
        `DELETE FROM idempotency_keys
          WHERE ctid IN (SELECT ctid FROM idempotency_keys WHERE expires_at < now() LIMIT $1 FOR UPDATE SKIP LOCKED)`,
        [SWEEP_BATCH],
      );
      deleted += count;
      if (count < SWEEP_BATCH) break;
    }
    if (deleted > 0) this.logger.debug({ deleted }, 'deleted expired idempotency keys');
    return deleted;
  }
}
