import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Queue } from 'bullmq';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '@app/config';
import { CallsQueue, placeCallJobId, QueueName, RedisClient } from '@app/queue';
import { PeriodicTask } from './periodic-task';

const PAGE_SIZE = 1000;
/** Runs younger than this are still being enqueued by the gateway. */
const SETTLE_SECONDS = 2;
const RECENT_WINDOW_SECONDS = 120;
const FULL_SWEEP_EVERY_MS = 30_000;

interface QueuedRun {
  id: number;
  organization_id: number;
}

/**
 * Makes sure every `queued` run has a dial job. The run row is the source of
 * truth: when the gateway could not reach Redis, or Redis lost its data, the
 * dispatcher enqueues the runs that have no job. Each round checks recent
 * runs; after Redis or Postgres was unreachable, and every 30 s, it sweeps
 * all queued runs. Enqueueing twice is harmless: the job id is the run's.
 */
@Injectable()
export class RunDispatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(RunDispatcher.name);
  private readonly task: PeriodicTask;
  private fullSweepDue = true;
  private lastFullSweep = 0;

  constructor(
    private readonly dataSource: DataSource,
    private readonly client: RedisClient,
    private readonly callsQueue: CallsQueue,
    @InjectQueue(QueueName.Calls) private readonly queue: Queue,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.task = new PeriodicTask('run-dispatcher', config.dispatchIntervalMs, client, () => this.round());
  }

  onApplicationBootstrap(): void {
    this.task.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.task.stop();
  }

  /** One round: recent runs, or all of them when a full sweep is due. Returns how many it enqueued. */
  async round(): Promise<void> {
    try {
      const full = this.fullSweepDue || Date.now() - this.lastFullSweep > FULL_SWEEP_EVERY_MS;
      const enqueued = full ? await this.sweep(null) : await this.sweep(RECENT_WINDOW_SECONDS);
      if (full) {
        this.fullSweepDue = false;
        this.lastFullSweep = Date.now();
      }
      if (enqueued > 0) this.logger.log({ enqueued, full }, 'enqueued queued runs that had no dial job');
    } catch (error) {
      // Whatever was unreachable, sweep everything once it is back.
      this.fullSweepDue = true;
      throw error;
    }
  }

  private async sweep(windowSeconds: number | null): Promise<number> {
    let afterId = 0;
    let enqueued = 0;
    for (;;) {
      const page: QueuedRun[] = await this.dataSource.query(
        `SELECT id, organization_id FROM workflow_runs
          WHERE status = 'queued' AND NOT is_completed AND id > $1
            AND status_changed_at < now() - make_interval(secs => $2)
            AND ($3::integer IS NULL OR status_changed_at > now() - make_interval(secs => $3))
          ORDER BY id LIMIT $4`,
        [afterId, SETTLE_SECONDS, windowSeconds, PAGE_SIZE],
      );
      if (page.length === 0) return enqueued;
      enqueued += await this.ensureJobs(page);
      afterId = page[page.length - 1].id;
      if (page.length < PAGE_SIZE) return enqueued;
    }
  }

  /** Enqueues the runs whose job is missing, or finished while the run is still queued. */
  private async ensureJobs(runs: QueuedRun[]): Promise<number> {
    const prefix = `${this.client.keyFor(QueueName.Calls)}:`;
    const pipeline = this.client.redis.pipeline();
    for (const run of runs) pipeline.hmget(prefix + placeCallJobId(run.id), 'name', 'finishedOn');
    const states = (await pipeline.exec()) ?? [];
    const missing: QueuedRun[] = [];
    for (const [index, run] of runs.entries()) {
      const [error, fields] = states[index] as [Error | null, [string | null, string | null]];
      if (error) throw error;
      const [name, finishedOn] = fields;
      if (name === null) {
        missing.push(run);
      } else if (finishedOn !== null) {
        await this.queue.remove(placeCallJobId(run.id));
        missing.push(run);
      }
    }
    await this.callsQueue.enqueuePlaceCall(missing.map((run) => ({ runId: run.id, organizationId: run.organization_id })));
    return missing.length;
  }
}
