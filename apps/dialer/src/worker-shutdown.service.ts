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
 * never ends (a dial that hangs) could not be forced. Once paused, with
 * nothing left in flight, the workers are closed without waiting on their
 * connections (see `closeWorkers`).
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
    await closeWorkers([this.calls.worker, this.events.worker], this.config.shutdownGraceMs, (outcome) => {
      const fields = { signal, grace_ms: this.config.shutdownGraceMs };
      if (outcome === 'drained') this.logger.log({ signal }, 'workers drained');
      else if (outcome === 'redis_away') this.logger.warn(fields, 'Redis still away after the grace period; closing the workers anyway');
      else this.logger.warn(fields, 'dials still in flight after the grace period; closing anyway');
    });
  }
}

/**
 * How a shutdown's wait ended: every worker paused with nothing in flight;
 * the grace period over with some worker's connection still waiting to
 * reconnect, or failing to, so never paused; or over with dials still
 * running.
 */
type ShutdownOutcome = 'drained' | 'redis_away' | 'in_flight';

/**
 * Stops the workers taking jobs, waits up to `graceMs` for the ones in
 * flight, then closes them: by force when some are still running.
 *
 * Drained, they are closed by force all the same: the pause has waited for
 * every job, and a graceful close would wait on their connections again,
 * first for the blocking one to end (BullMQ's close disconnects it once more
 * and waits for its 'end', as the pause does; see
 * `blockingConnectionSettled`), then for a QUIT that a connection waiting to
 * reconnect only sends once Redis is back. A Redis blip after the first
 * worker paused, while a dial kept the other busy, would hold the process
 * there, past its grace.
 */
export async function closeWorkers(workers: Worker[], graceMs: number, report: (outcome: ShutdownOutcome) => void): Promise<void> {
  let overdue = false;
  let waitingForRedis = 0;
  let pauseFailed = false;
  // Each resolves true once its worker has paused, or false when the grace period ended before it could begin to.
  const pauses = workers.map(async (worker) => {
    if (!worker.isPaused()) {
      waitingForRedis++;
      const settled = await blockingConnectionSettled(worker, () => overdue);
      waitingForRedis--;
      if (!settled) return false;
    }
    // A pause fails on its blocking connection (Redis away again), before or after waiting for the jobs; which, it
    // does not say. That worker counts as never paused: the grace period runs out for it, then it is closed below,
    // by force, as is every worker (a rejection here would skip those closes).
    const paused = await worker.pause().then(
      () => true,
      () => false,
    );
    if (!paused) {
      pauseFailed = true;
      await new Promise<never>(() => undefined);
    }
    return true;
  });
  const drained = Promise.all(pauses).then(() => true);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), graceMs);
  });
  let finished: boolean;
  try {
    finished = await Promise.race([drained, timeout]);
  } finally {
    clearTimeout(timer);
    overdue = true;
  }
  report(finished ? 'drained' : waitingForRedis > 0 || pauseFailed ? 'redis_away' : 'in_flight');
  if (!finished) {
    // A pause goes on waiting for the dials cut off, and reconnects its worker's blocking client once they end: that
    // client is closed again then, or it would hold the process open.
    for (const [index, pause] of pauses.entries()) {
      void pause.then((paused) => (paused ? workers[index].disconnect() : undefined)).catch(() => undefined);
    }
  }
  await Promise.all(workers.map((worker) => worker.close(true)));
}

/** How often a shutdown looks whether a worker's blocking connection is back. */
const RECONNECT_POLL_MS = 50;

/**
 * The ioredis states in which a connection can be disconnected and say so
 * ('end'): up, never connected, or already ended. The others are a
 * reconnection under way, waiting between two attempts or in one.
 */
const DISCONNECTABLE = new Set(['ready', 'wait', 'end']);

/**
 * Resolves true once the worker's blocking connection is up (not waiting
 * to reconnect, nor trying to), or false once `overdue` says the grace
 * period is over. A pause disconnects that connection and waits for its 'end',
 * which ioredis never emits for a client disconnected in that wait: its
 * timer is cleared and no socket is left to close (taskforcesh/bullmq#4065;
 * BullMQ's own `waitForJob` notes the same ioredis behaviour, #4585). After
 * a Redis blip, the shutdown would then wait out its whole grace period with
 * nothing in flight, and warn of dials that were not there. One caught in
 * an attempt would end, but the pause then reconnects it and waits for it
 * to be ready, which with Redis away is the same wait, misreported.
 *
 * With Redis back this waits one reconnection delay at most (`reconnectDelay`,
 * 2.2 s); with Redis away, until the grace period is over. The worker is not
 * paused meanwhile (a pause would have to come first, and a second one does
 * nothing): it may still take a job, which the pause then waits for as for
 * any other. The pause itself may also wait for BullMQ's watchdog on a
 * blocking fetch that the blip interrupted: its block time, 5 s, and 1 s more.
 */
async function blockingConnectionSettled(worker: Worker, overdue: () => boolean): Promise<boolean> {
  const client = await worker.backend.blockingConnection?.client;
  while (client && !DISCONNECTABLE.has(client.status)) {
    if (overdue()) return false;
    await new Promise((resolve) => setTimeout(resolve, RECONNECT_POLL_MS));
  }
  return !overdue();
}
