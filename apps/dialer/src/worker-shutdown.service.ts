import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { Worker } from 'bullmq';
import { APP_CONFIG, AppConfig } from '@app/config';
import { CallEventsProcessor } from './call-events/call-events.processor';
import { PlaceCallProcessor } from './calls/place-call.processor';

/**
 * On shutdown the workers stop taking jobs and the dials in flight get
 * SHUTDOWN_GRACE_MS to finish. Past that the workers are closed by force:
 * their jobs' locks lapse and another dialer picks them up, where the run's
 * conditional claim keeps a call from being placed twice.
 */
@Injectable()
export class WorkerShutdown implements BeforeApplicationShutdown {
  private readonly logger = new Logger(WorkerShutdown.name);

  constructor(
    private readonly calls: PlaceCallProcessor,
    private readonly events: CallEventsProcessor,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async beforeApplicationShutdown(signal?: string): Promise<void> {
    const workers: Worker[] = [this.calls.worker, this.events.worker];
    const graceful = Promise.all(workers.map((worker) => worker.close())).then(() => true);
    const timeout = new Promise<false>((resolve) => setTimeout(() => resolve(false), this.config.shutdownGraceMs).unref());
    const finished = await Promise.race([graceful, timeout]);
    if (!finished) {
      this.logger.warn({ signal, grace_ms: this.config.shutdownGraceMs }, 'dials still in flight after the grace period; closing anyway');
      await Promise.all(workers.map((worker) => worker.close(true)));
    } else {
      this.logger.log({ signal }, 'workers drained');
    }
  }
}
