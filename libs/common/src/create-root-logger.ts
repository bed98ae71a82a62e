import pino, { Logger as PinoLogger } from 'pino';

/** Paths whose values never reach a log line: keys, credentials, tokens. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  '*.credentials',
  '*.api_key',
  '*.apiKey',
  '*.token',
  '*.secret',
];

/** One JSON logger per process; `app` names the process in every line. */
export function createRootLogger(app: string, level: string): PinoLogger {
  return pino({
    level,
    base: { app, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    formatters: { level: (label) => ({ level: label }) },
  });
}
