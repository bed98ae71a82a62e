import type { EventEmitter } from 'node:events';
import type { Logger as PinoLogger } from 'pino';
import { LogLimiter } from './log-limiter';

/** At most one log line per this much time; the errors in between are counted into the next one. */
const LOG_EVERY_MS = 10_000;

/**
 * Logs the errors a listening HTTP server emits, rather than crashing on
 * them. Once listening, neither Nest nor Fastify keeps a listener for the
 * server's 'error', and Node throws an 'error' no one listens for: one
 * connection the kernel would not hand over (`accept EMFILE` once the
 * process is out of file descriptors, under a flood of connections) would
 * end the process, and with it every trigger, upload and dial in flight.
 * The server goes on listening after such an error. One in 10 s at most
 * is logged, with the count of those left out since the last.
 */
export function logServerErrors(server: EventEmitter, logger: PinoLogger, now: () => number = Date.now): void {
  const limiter = new LogLimiter(LOG_EVERY_MS, now);
  server.on('error', (error: Error) => {
    const leftOut = limiter.admit();
    if (leftOut !== null) logger.error({ err: error, left_out: leftOut }, 'HTTP server error; still listening');
  });
}
