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
 *
 * The wait is a pause, not a close: once a BullMQ worker is closing, a
 * second `close(true)` only waits for the first, so a graceful close that
 * never ends (a dial that hangs) could not be forced.
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
    await closeWorkers([this.calls.worker, this.events.worker], this.config.shutdownGraceMs, (drained) => {
      if (drained) this.logger.log({ signal }, 'workers drained');
      else this.logger.warn({ signal, grace_ms: this.config.shutdownGraceMs }, 'dials still in flight after the grace period; closing anyway');
    });
  }
}

/**
 * Stops the workers taking jobs, waits up to `graceMs` for the ones in
 * flight, then closes them: by force when some are still running.
 */
async function closeWorkers(workers: Worker[], graceMs: number, report: (drained: boolean) => void): Promise<void> {
  const pauses = workers.map((worker) => worker.pause());
  const drained = Promise.all(pauses).then(() => true);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), graceMs);
  });
  const finished = await Promise.race([drained, timeout]);
  clearTimeout(timer);
  report(finished);
  if (!finished) {
    // A pause goes on waiting for the dials cut off, and reconnects its worker's blocking client once they end: that
    // client is closed again then, or it would hold the process open.
    for (const [index, pause] of pauses.entries()) void pause.then(() => workers[index].disconnect()).catch(() => undefined);
  }
  await Promise.all(workers.map((worker) => worker.close(!finished)));
}
