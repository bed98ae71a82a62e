import { Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Logger, OnModuleInit } from '@nestjs/common';
import { DelayedError, Job } from 'bullmq';
import { APP_CONFIG, AppConfig } from '@app/config';
import { CallEventJob, cappedExponentialBackoff, databaseAwayWait, logConnectionErrors, QueueName, RedisHeartbeat } from '@app/queue';
import { CallEventApplier, EventTooEarly } from './call-event-applier.service';
import { RecordingFetchesBusy } from './run-artifacts-collector.service';

/**
 * Consumes carrier status events. Errors are logged with context and
 * rethrown so BullMQ retries, but for a database that cannot be reached:
 * the event then waits for it (1 s doubling to 30 s) without spending an
 * attempt, up to `DATABASE_AWAY_RIDE_OUT_MS` from its arrival. Its 40
 * attempts (10 to 17 minutes) would otherwise run out in a longer outage,
 * and the event be lost: its status, its recording, its price.
 */
// The job policy's backoff is this strategy: without it a failed event job errors instead of retrying.
@Processor(QueueName.CallEvents, { settings: { backoffStrategy: cappedExponentialBackoff } })
export class CallEventsProcessor extends WorkerHost implements OnModuleInit {
  private readonly logger = new Logger(CallEventsProcessor.name);

  constructor(
    private readonly applier: CallEventApplier,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly heartbeat: RedisHeartbeat,
  ) {
    super();
  }

  onModuleInit(): void {
    this.worker.concurrency = this.config.dialerConcurrency;
    logConnectionErrors(this.worker, `worker ${QueueName.CallEvents}`, this.logger);
    this.heartbeat.watch(this.worker);
  }

  /** Answers whether any of the job's events moved the run. */
  async process(job: Job<CallEventJob>, token?: string): Promise<boolean> {
    const attempt = job.attemptsMade + 1;
    const lastAttempt = attempt >= (job.opts.attempts ?? 1);
    try {
      return await this.applier.applyJob(job.data, lastAttempt, job.timestamp);
    } catch (error) {
      const about = { run_id: job.data.runId, event: job.data.type, job_id: job.id };
      if (error instanceof RecordingFetchesBusy) {
        // Back to the queue for a few seconds, no attempt spent, freeing this worker for other calls' events.
        this.logger.debug(about, error.message);
        return delayed(job, error.untilMs, token, error.message);
      }
      if (error instanceof EventTooEarly) {
        // Expected: webhooks of one call come in no promised order. The job's retry, or its return after the delay, applies it.
        this.logger.log({ ...about, attempt }, error.message);
        if (error.untilMs === undefined) throw error;
        return delayed(job, error.untilMs, token, error.message);
      }
      const fields = { err: error, ...about, attempt };
      const away = databaseAwayWait(job, error);
      if (away) {
        if (away.logged) this.logger.warn({ ...fields, passes: away.passes, retry_in_ms: away.waitMs }, 'call event waits for the database');
        return delayed(job, Date.now() + away.waitMs, token, 'waiting for the database');
      }
      this.logger.error(fields, lastAttempt ? 'call event failed on its last attempt; it is dropped' : 'call event failed');
      throw error;
    }
  }
}

/** Sends the job back to wait until `untilMs`, spending no attempt. */
async function delayed(job: Job<CallEventJob>, untilMs: number, token: string | undefined, why: string): Promise<never> {
  await job.moveToDelayed(untilMs, token);
  throw new DelayedError(why);
}
