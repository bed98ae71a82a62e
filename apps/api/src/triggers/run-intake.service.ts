import { Inject, Injectable, Logger } from '@nestjs/common';
import { Batcher, Errors, failingAlone, LogLimiter, withTimeout } from '@app/common';
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
 * Triggers waiting for an insert to take them, at most: 50 full groups. While the database keeps up, the triggers
 * waiting are about as many as arrive during one insert (a few hundred at the bench's 100 connections); a burst of
 * more than this many at once from a gateway's clients is answered 503 in part, for them to send again.
 */
export const MAX_WAITING = 10_000;
/** How long a trigger waits for an insert to take it, at most; its own insert may then take up to the read timeout. */
export const MAX_WAIT_MS = 10_000;

function refusedUnstored(reason: 'full' | 'late'): Error {
  return Errors.serviceUnavailable(
    reason === 'full'
      ? 'Too many triggers are waiting for the database; nothing was stored: retry'
      : 'The database did not take this trigger in time; nothing was stored: retry',
  );
}

/**
 * Groups whose enqueue Redis has not answered yet, at most (their commands
 * wait in the producer connection's memory, answered or not, past
 * ENQUEUE_TIMEOUT_MS). A Redis that holds its answers (a partition, a
 * failover's pause) would otherwise gather a command per group for as long
 * as it lasts; past this many, a group's jobs are left to the dispatcher at
 * once. While Redis answers, a handful are unanswered at a time.
 */
export const MAX_ENQUEUES_UNANSWERED = 16;

/** A stored run's id, and the enqueue of its group's jobs (bounded by ENQUEUE_TIMEOUT_MS; it never rejects). */
interface StoredRun {
  id: number;
  queued: Promise<void>;
}

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
  /**
   * Groups left to the dispatcher, logged one line per 10 s at most: while
   * Redis is away every group is, hundreds a second under load.
   */
  private readonly leftToDispatcherLog = new LogLimiter(10_000);
  private readonly batcher: Batcher<NewRun, StoredRun | null>;
  private enqueuesUnanswered = 0;

  constructor(
    private readonly runs: WorkflowRunStore,
    private readonly callsQueue: CallsQueue,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.batcher = new Batcher((batch) => this.storeAndEnqueue(batch), {
      maxBatch: MAX_BATCH,
      // Never more than half the pool: the rest is for everything else the gateway reads and writes.
      maxInFlight: Math.max(1, Math.min(MAX_INSERTS_IN_FLIGHT, Math.floor(config.databasePoolSize / 2))),
      // A database that holds the inserts (each for up to its read timeout) must not hold every trigger behind them
      // for minutes, in memory, while their clients give up and send them again (a second call for each one stored
      // after its client left): past these, a trigger answers 503 at once, nothing stored, for its client to retry.
      waiting: { maxWaiting: MAX_WAITING, maxWaitMs: MAX_WAIT_MS, refusal: refusedUnstored },
    });
  }

  /**
   * Resolves with the run id once the run is committed (and its job
   * enqueued, or left to the dispatcher); with null, storing nothing, when
   * the run's Idempotency-Key is held by another request.
   */
  async accept(run: NewRun): Promise<number | null> {
    const stored = await this.batcher.submit(run);
    if (stored === null) return null;
    await stored.queued;
    return stored.id;
  }

  /**
   * The group's insert holds one of the intake's insert slots; its enqueue
   * does not: a Redis slow to answer (partitioned, paused in a failover) would
   * otherwise hold every slot for ENQUEUE_TIMEOUT_MS per group, and cap the
   * triggers a healthy database takes.
   */
  private async storeAndEnqueue(batch: NewRun[]): Promise<Array<StoredRun | null | Error>> {
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
    const queued = this.enqueue(batch, ids, counting);
    return ids.map((id) => (typeof id === 'number' ? { id, queued } : id));
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
    if (this.enqueuesUnanswered >= MAX_ENQUEUES_UNANSWERED) {
      // Nothing sent: counted out of their backlogs again, as the dispatcher counts them in.
      this.uncount(batch, counting, (index) => typeof ids[index] === 'number');
      const leftOut = this.leftToDispatcherLog.admit();
      if (leftOut !== null) {
        this.logger.warn(
          { run_ids: jobs.map((job) => job.runId), unanswered: this.enqueuesUnanswered, groups_left_out: leftOut },
          'dial jobs not enqueued: Redis has not answered earlier enqueues; the dispatcher will enqueue them',
        );
      }
      return;
    }
    this.enqueuesUnanswered += 1;
    const enqueueing = counting.then((bands) =>
      this.callsQueue.enqueuePlaceCall(jobs, stored.map((index) => bands[index])).catch((error: unknown) => {
        // Refused (however late): the dispatcher enqueues these runs, counting them in again, so they are counted out
        // here, or each would leave its organization's backlog one job longer until its band is forgotten. Only those
        // found without a job: the command may have run all the same (a connection closed once it was sent).
        this.callsQueue.runsWithoutJobs(jobs.map((job) => job.runId)).then(
          (missing) => {
            const without = new Set(missing);
            this.uncount(batch, counting, (index) => without.has(ids[index] as number));
          },
          (lookError: unknown) => this.logger.warn({ err: lookError }, 'runs whose jobs were refused not counted out of their backlogs'),
        );
        throw error;
      }),
    );
    enqueueing.then(
      () => (this.enqueuesUnanswered -= 1),
      () => (this.enqueuesUnanswered -= 1),
    );
    try {
      await withTimeout(enqueueing, this.config.enqueueTimeoutMs, 'enqueueing the dial jobs');
    } catch (error) {
      const leftOut = this.leftToDispatcherLog.admit();
      if (leftOut !== null) {
        this.logger.warn(
          { run_ids: jobs.map((job) => job.runId), err: error, groups_left_out: leftOut },
          'dial jobs not enqueued now; the dispatcher will enqueue them',
        );
      }
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
