import type { INestApplication } from '@nestjs/common';
import type { Logger as PinoLogger } from 'pino';

/**
 * Closes the app on SIGTERM or SIGINT and exits 0 once it has shut down
 * cleanly (1 if closing failed). Nest's own shutdown hooks re-raise the
 * signal, which would make a clean stop look like a crash to supervisors.
 */
export function closeOnSignal(app: INestApplication, logger: PinoLogger): void {
  let closing = false;
  const close = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    logger.info({ signal }, 'shutting down');
    app.close().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', close);
  process.once('SIGINT', close);
}
