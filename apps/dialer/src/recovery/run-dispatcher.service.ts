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
const NEW_RUNS_PAGE_SIZE = 5000;
const FULL_SWEEP_EVERY_MS = 30_000;

export interface QueuedRun {
  id: number;
  organization_id: number;
}

interface NewRunRow extends QueuedRun {
  queued: boolean;
  settled: boolean;
}

/**
 * Makes sure every `queued` run has a dial job. The run row is the source of
 * truth: when the gateway could not reach Redis, or Redis lost its data, the
 * dispatcher enqueues the runs that have no job. Each round checks the runs
 * created since the last round, once each, as soon as they are SETTLE_SECONDS
 * old (walking the primary key from a mark, so the cost follows the trigger
 * rate, not the backlog); after Redis or Postgres was unreachable, and every
 * 30 s, it sweeps all queued runs (which also catches a run whose insert took
 * longer than the settle time to commit). Enqueueing twice is harmless: the
 * job id is the run's.
 */
@Injectable()
export class RunDispatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(RunDispatcher.name);
  private readonly task: PeriodicTask;
  private fullSweepDue = true;
  private lastFullSweep = 0;
  /** Every run up to this id has been checked by a round (null: not known yet). */
  private checkedUpTo: number | null = null;

  constructor(
    private readonly dataSource: DataSource,
    private readonly client: RedisClient,
    private readonly callsQueue: CallsQueue,
    @InjectQueue(QueueName.Calls) private readonly queue: Queue,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.task = new PeriodicTask('run-dispatcher', config.dispatchIntervalMs, client, (stopping) => this.round(stopping));
  }

  onApplicationBootstrap(): void {
    this.task.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.task.stop();
  }

  /**
   * One round: the runs created since the last one, or all queued runs when a
   * full sweep is due. `stopping` (the dialer shutting down) ends it after the
   * page in hand; a sweep cut short is not counted as done.
   */
  async round(stopping?: AbortSignal): Promise<void> {
    try {
      // A monotonic clock: the wall clock stepped back would put the sweep off by as much.
      const full = this.fullSweepDue || performance.now() - this.lastFullSweep > FULL_SWEEP_EVERY_MS;
      let enqueued = 0;
      if (full) {
        const mark = await this.settledMark();
        enqueued = await this.sweep(stopping);
        if (stopping?.aborted) return;
        this.checkedUpTo = Math.max(this.checkedUpTo ?? 0, mark);
        this.fullSweepDue = false;
        this.lastFullSweep = performance.now();
      } else {
        enqueued = await this.checkNewRuns(stopping);
      }
      if (enqueued > 0) this.logger.log({ enqueued, full }, 'enqueued queued runs that had no dial job');
    } catch (error) {
      // Whatever was unreachable, sweep everything once it is back.
      this.fullSweepDue = true;
      throw error;
    }
  }

  /** The newest run old enough to be settled: a full sweep that starts now covers everything up to it. */
  private async settledMark(): Promise<number> {
    const [row]: Array<{ id: number | null }> = await this.dataSource.query(
      `SELECT max(id) AS id FROM workflow_runs WHERE created_at < now() - make_interval(secs => $1)`,
      [SETTLE_SECONDS],
    );
    return row?.id ?? 0;
  }

  /** Walks the runs after the mark in id order, up to the first one not yet settled. */
  private async checkNewRuns(stopping?: AbortSignal): Promise<number> {
    let enqueued = 0;
    for (;;) {
      if (stopping?.aborted) return enqueued;
      const page: NewRunRow[] = await this.dataSource.query(
        `SELECT id, organization_id, status = 'queued' AND NOT is_completed AS queued,
                created_at < now() - make_interval(secs => $2) AS settled
           FROM workflow_runs WHERE id > $1 ORDER BY id LIMIT $3`,
        [this.checkedUpTo ?? 0, SETTLE_SECONDS, NEW_RUNS_PAGE_SIZE],
      );
      const settled = page.findIndex((row) => !row.settled);
      const checked = settled === -1 ? page : page.slice(0, settled);
      if (checked.length === 0) return enqueued;
      enqueued += await this.ensureJobs(checked.filter((row) => row.queued));
      this.checkedUpTo = checked[checked.length - 1].id;
      if (checked.length < page.length || page.length < NEW_RUNS_PAGE_SIZE) return enqueued;
    }
  }

  /**
   * Every settled queued run, a page at a time, in the order of the index of
   * open runs (`status`, `status_changed_at`), each page read from where the
   * last one ended: in id order, which that index does not hold, each page
   * read every queued run again (or walked the finished runs' ids to it), a
   * hundred million rows a sweep under a backlog of 100,000. A run whose
   * status changes meanwhile may be met twice or not at all: ensuring its
   * job twice is harmless, and the next sweep meets it.
   */
  private async sweep(stopping?: AbortSignal): Promise<number> {
    let after: { changedAt: string; id: number } | null = null;
    let enqueued = 0;
    for (;;) {
      if (stopping?.aborted) return enqueued;
      const page: Array<QueuedRun & { changed_at: string }> = await this.dataSource.query(
        `SELECT id, organization_id, status_changed_at::text AS changed_at FROM workflow_runs
          WHERE status = 'queued' AND NOT is_completed
            AND status_changed_at < now() - make_interval(secs => $1)
            AND status_changed_at >= COALESCE($2::timestamptz, '-infinity')
            AND (status_changed_at, id) > (COALESCE($2::timestamptz, '-infinity'), $3::bigint)
          ORDER BY status_changed_at, id LIMIT $4`,
        [SETTLE_SECONDS, after?.changedAt ?? null, after?.id ?? 0, PAGE_SIZE],
      );
      if (page.length === 0) return enqueued;
      enqueued += await this.ensureJobs(page.map(({ id, organization_id }) => ({ id, organization_id })));
      const last = page[page.length - 1];
      after = { changedAt: last.changed_at, id: last.id };
      if (page.length < PAGE_SIZE) return enqueued;
    }
  }

  /** Enqueues the runs whose job is missing, or finished while the run is still queued; answers how many. */
  async ensureJobs(runs: QueuedRun[]): Promise<number> {
    if (runs.length === 0) return 0;
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
