import { Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Logger, OnModuleInit } from '@nestjs/common';
import { Job } from 'bullmq';
import { APP_CONFIG, AppConfig } from '@app/config';
import { CallEventJob, QueueName } from '@app/queue';
import { CallEventApplier } from './call-event-applier.service';

/** Consumes carrier status events. Errors are logged with context and rethrown so BullMQ retries. */
@Processor(QueueName.CallEvents)
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
  }

  async process(job: Job<CallEventJob>): Promise<boolean> {
    try {
      return await this.applier.apply(job.data);
    } catch (error) {
      this.logger.error(
        { err: error, run_id: job.data.runId, event: job.data.type, job_id: job.id, attempt: job.attemptsMade + 1 },
        'call event failed',
      );
      throw error;
    }
  }
}
