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
  let overdue = false;
  // Each resolves true once its worker has paused, or false when the grace period ended before it could begin to.
  const pauses = workers.map(async (worker) => {
    if (!(await blockingConnectionSettled(worker, () => overdue))) return false;
    await worker.pause();
    return true;
  });
  const drained = Promise.all(pauses).then(() => true);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), graceMs);
  });
  const finished = await Promise.race([drained, timeout]);
  clearTimeout(timer);
  overdue = true;
  report(finished);
  if (!finished) {
    // A pause goes on waiting for the dials cut off, and reconnects its worker's blocking client once they end: that
    // client is closed again then, or it would hold the process open.
    for (const [index, pause] of pauses.entries()) {
      void pause.then((paused) => (paused ? workers[index].disconnect() : undefined)).catch(() => undefined);
    }
  }
  await Promise.all(workers.map((worker) => worker.close(!finished)));
}

/** How often a shutdown looks whether a worker's blocking connection has left its wait to reconnect. */
const RECONNECT_POLL_MS = 50;

/**
 * Resolves true once the worker's blocking connection is not waiting between
 * two attempts to reconnect, or false once `overdue` says the grace period
 * is over. A pause disconnects that connection and waits for its 'end',
 * which ioredis never emits for a client disconnected in that wait: its
 * timer is cleared and no socket is left to close (taskforcesh/bullmq#4065).
 * After any Redis blip, the shutdown would then wait out its whole grace
 * period with nothing in flight, and warn of dials that were not there.
 * With Redis back this waits one reconnection delay at most (2 s,
 * `reconnectDelay`); with Redis away, until the grace period is over. A job
 * the worker takes meanwhile is waited for by the pause, as any other. (The
 * pause itself may then wait for BullMQ's watchdog on a blocking fetch that
 * the blip interrupted: its block time, 5 s, and 1 s more.)
 */
async function blockingConnectionSettled(worker: Worker, overdue: () => boolean): Promise<boolean> {
  const client = await worker.backend.blockingConnection?.client;
  while (client?.status === 'reconnecting') {
    if (overdue()) return false;
    await new Promise((resolve) => setTimeout(resolve, RECONNECT_POLL_MS));
  }
  return !overdue();
}
