import { Inject, Injectable, Logger } from '@nestjs/common';
import { Batcher, failingAlone, withTimeout } from '@app/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { NewRun, WorkflowRunStore } from '@app/persistence';
import { CallsQueue, PlaceCallJob } from '@app/queue';

const MAX_BATCH = 200;
/**
 * Grouped inserts at once. Two rather than five (half the default pool):
 * larger groups, and Postgres spent 17 % less CPU per trigger with no loss
 * of throughput or p99 (README, "What changed").
 */
const MAX_INSERTS_IN_FLIGHT = 2;

/**
 * Stores accepted runs and enqueues their dial jobs, grouping concurrent
 * triggers into one INSERT (which also claims their Idempotency-Keys) and
 * one `addBulk` each. The run row is the
 * promise: once it is committed the call will be placed, so the enqueue is
 * bounded by ENQUEUE_TIMEOUT_MS and, when Redis is slow or away, left to the
 * dialer's dispatcher instead of holding the answer.
 */
@Injectable()
export class RunIntake {
  private readonly logger = new Logger(RunIntake.name);
  private readonly batcher: Batcher<NewRun, number | null>;

  constructor(
    private readonly runs: WorkflowRunStore,
    private readonly callsQueue: CallsQueue,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.batcher = new Batcher((batch) => this.storeAndEnqueue(batch), {
      maxBatch: MAX_BATCH,
      // Never more than half the pool: the rest is for everything else the gateway reads and writes.
      maxInFlight: Math.max(1, Math.min(MAX_INSERTS_IN_FLIGHT, Math.floor(config.databasePoolSize / 2))),
    });
  }

  /**
   * Resolves with the run id once the run is committed (and its job
   * enqueued, or left to the dispatcher); with null, storing nothing, when
   * the run's Idempotency-Key is held by another request.
   */
  accept(run: NewRun): Promise<number | null> {
    return this.batcher.submit(run);
  }

  private async storeAndEnqueue(batch: NewRun[]): Promise<Array<number | null | Error>> {
    // The jobs' bands in their organizations' backlogs are counted while the runs are stored, not after: the
    // enqueue stays one round trip. A run that is not stored is counted out again.
    const counting = this.callsQueue.countIn(batch.map((run) => run.organizationId));
    counting.catch(() => undefined);
    let ids: Array<number | null | Error>;
    try {
      ids = await this.store(batch);
    } catch (error) {
      this.uncount(batch, counting, () => true);
      throw error;
    }
    this.uncount(batch, counting, (index) => typeof ids[index] !== 'number');
    await this.enqueue(batch, ids, counting);
    return ids;
  }

  /**
   * One run the database refuses (its workflow deleted meanwhile, say) must
   * not fail the others. Sent again one at a time: each group in flight
   * then still holds one connection, within the half of the pool the intake
   * keeps to.
   */
  private readonly store = failingAlone((batch: NewRun[]) => this.runs.insertQueued(batch), 1);

  /** Best effort within ENQUEUE_TIMEOUT_MS; a run left without a job is enqueued by the dispatcher. */
  private async enqueue(batch: NewRun[], ids: Array<number | null | Error>, counting: Promise<number[]>): Promise<void> {
    const jobs: PlaceCallJob[] = [];
    const stored: number[] = [];
    for (const [index, id] of ids.entries()) {
      if (typeof id !== 'number') continue;
      jobs.push(placeCallJobOf(id, batch[index]));
      stored.push(index);
    }
    if (jobs.length === 0) return;
    const enqueueing = counting.then((bands) => this.callsQueue.enqueuePlaceCall(jobs, stored.map((index) => bands[index])));
    try {
      await withTimeout(enqueueing, this.config.enqueueTimeoutMs, 'enqueueing the dial jobs');
    } catch (error) {
      this.logger.warn(
        { run_ids: jobs.map((job) => job.runId), err: error },
        'dial jobs not enqueued now; the dispatcher will enqueue them',
      );
    }
  }

  /** Counts the runs `unstored` picks (by their index in the batch) out of their backlogs again; best effort. */
  private uncount(batch: NewRun[], counting: Promise<number[]>, unstored: (index: number) => boolean): void {
    const indexes = batch.flatMap((_run, index) => (unstored(index) ? [index] : []));
    if (indexes.length === 0) return;
    counting
      .then((bands) => Promise.all(indexes.map((index) => this.callsQueue.uncount(batch[index].organizationId, bands[index]))))
      .catch((error: unknown) => {
        // Harmless but for fairness: the organization's backlog reads longer until its count expires.
        this.logger.warn({ err: error }, 'runs not stored were not counted out of their backlogs');
      });
  }
}

/** The run's dial job, with what the dialer needs before its claim (see `PlaceCallJob.route`). */
function placeCallJobOf(runId: number, run: NewRun): PlaceCallJob {
  const { organizationId, telephonyConfigurationId, workflowId, environment, triggerUuid } = run;
  return { runId, organizationId, route: { telephonyConfigurationId, workflowId, environment, triggerUuid } };
}
