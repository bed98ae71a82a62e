import { Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Logger, OnModuleInit } from '@nestjs/common';
import { DelayedError, Job } from 'bullmq';
import { APP_CONFIG, AppConfig } from '@app/config';
import { CallEventJob, cappedExponentialBackoff, logConnectionErrors, QueueName } from '@app/queue';
import { CallEventApplier, EventTooEarly } from './call-event-applier.service';

/** Consumes carrier status events. Errors are logged with context and rethrown so BullMQ retries. */
// The job policy's backoff is this strategy: without it a failed event job errors instead of retrying.
@Processor(QueueName.CallEvents, { settings: { backoffStrategy: cappedExponentialBackoff } })
export class CallEventsProcessor extends WorkerHost implements OnModuleInit {
  private readonly logger = new Logger(CallEventsProcessor.name);

  constructor(
    private readonly applier: CallEventApplier,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    super();
  }

  onModuleInit(): void {
    this.worker.concurrency = this.config.dialerConcurrency;
    logConnectionErrors(this.worker, `worker ${QueueName.CallEvents}`, this.logger);
  }

  /** Answers whether any of the job's events moved the run. */
  async process(job: Job<CallEventJob>, token?: string): Promise<boolean> {
    try {
      return await this.applier.applyJob(job.data, job.attemptsMade + 1 >= (job.opts.attempts ?? 1), job.timestamp);
    } catch (error) {
      if (error instanceof EventTooEarly) {
        // Expected: webhooks of one call come in no promised order. The job's retry, or its return after the delay, applies it.
        this.logger.log({ run_id: job.data.runId, event: job.data.type, job_id: job.id, attempt: job.attemptsMade + 1 }, error.message);
        if (error.untilMs === undefined) throw error;
        await job.moveToDelayed(error.untilMs, token);
        throw new DelayedError(error.message);
      }
      this.logger.error(
        { err: error, run_id: job.data.runId, event: job.data.type, job_id: job.id, attempt: job.attemptsMade + 1 },
        'call event failed',
      );
      throw error;
    }
  }
}
