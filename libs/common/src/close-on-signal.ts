import type { INestApplication } from '@nestjs/common';
import type { Logger as PinoLogger } from 'pino';

/** Hands the booted app to the signal handling that `closeOnSignal` installed. */
export interface SignalShutdown {
  /**
   * `closeWithinMs`: a close that has not finished by then (a connection
   * waiting for a Redis or Postgres that is away, a hook that hangs) is
   * given up, logged, and the process exits 1.
   */
  attach(app: INestApplication, logger: PinoLogger, closeWithinMs: number): void;
  /**
   * The app failed to start and its starter closes it: a signal from now on
   * closes nothing more (the close is under way) and cannot turn the failed
   * start's exit code 1 into a clean stop's 0. Answers whether a signal's
   * close was already under way (the starter then leaves the exit to it,
   * which is then 1 too).
   */
  startFailed(): boolean;
}

/**
 * Closes the app on SIGTERM, SIGINT or SIGHUP and exits 0 once it has shut down
 * cleanly (1 if closing failed). Nest's own shutdown hooks re-raise the
 * signal, which would make a clean stop look like a crash to supervisors.
 * Call it first thing in `main`: a signal that arrives while the app is
 * still booting is held until `attach` hands over the app, then honoured.
 */
export function closeOnSignal(): SignalShutdown {
  let requested: NodeJS.Signals | null = null;
  let attached: { app: INestApplication; logger: PinoLogger; closeWithinMs: number } | null = null;
  let closing = false;
  /** The starter's start failed while a signal's close was under way: that close ends with exit code 1. */
  let failedStart = false;

  const close = () => {
    if (closing || !attached || !requested) return;
    closing = true;
    const { app, logger, closeWithinMs } = attached;
    logger.info({ signal: requested }, 'shutting down');
    const overdue = setTimeout(() => {
      logger.error({ within_ms: closeWithinMs }, 'shutdown did not finish in time; exiting without it');
      process.exit(1);
    }, closeWithinMs);
    app.close().then(
      () => {
        clearTimeout(overdue);
        logger.info('stopped');
        process.exit(failedStart ? 1 : 0);
      },
      (error: unknown) => {
        clearTimeout(overdue);
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  const onSignal = (signal: NodeJS.Signals) => {
    requested ??= signal;
    close();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  // A terminal that goes away (an SSH session dropped under `npm run start:dialer`): left to Node, the process would
  // exit at once, cutting dials off mid-request.
  process.on('SIGHUP', onSignal);

  return {
    attach(app, logger, closeWithinMs) {
      attached = { app, logger, closeWithinMs };
      close();
    },
    startFailed() {
      const already = closing;
      closing = true;
      failedStart = already;
      return already;
    },
  };
}
