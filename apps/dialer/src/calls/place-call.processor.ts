import { Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Logger, OnModuleInit } from '@nestjs/common';
import { Job } from 'bullmq';
import { APP_CONFIG, AppConfig } from '@app/config';
import { PlaceCallJob, QueueName } from '@app/queue';
import { CallPlacer, PlaceOutcome } from './call-placer.service';

/** Consumes `place-call` jobs. Errors are logged with context and rethrown so BullMQ retries. */
@Processor(QueueName.Calls)
export class PlaceCallProcessor extends WorkerHost implements OnModuleInit {
  private readonly logger = new Logger(PlaceCallProcessor.name);

  constructor(
    private readonly placer: CallPlacer,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    super();
  }

  onModuleInit(): void {
    this.worker.concurrency = this.config.dialerConcurrency;
  }

  async process(job: Job<PlaceCallJob>): Promise<PlaceOutcome> {
    try {
      return await this.placer.place(job.data.runId);
    } catch (error) {
      this.logger.error({ err: error, run_id: job.data.runId, job_id: job.id, attempt: job.attemptsMade + 1 }, 'place-call failed');
      throw error;
    }
  }
}
