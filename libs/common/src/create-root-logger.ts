import pino, { DestinationStream, Logger as PinoLogger } from 'pino';

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

/**
 * Bearer tokens that travel in a URL: a download link's payload and
 * signature, an agent session's token, and query parameters of those names.
 */
const URL_SECRETS: Array<[RegExp, string]> = [
  [/(\/downloads\/)[^?#]*/, '$1[redacted]'],
  [/(\/agent-sessions\/)[^/?#]+/, '$1[redacted]'],
  [/([?&](?:session_token|token|signature)=)[^&#]*/gi, '$1[redacted]'],
];

/** A request URL as it may be logged: the tokens some URLs carry are replaced. */
export function urlForLog(url: string | undefined): string | undefined {
  return url === undefined ? undefined : URL_SECRETS.reduce((masked, [pattern, replacement]) => masked.replace(pattern, replacement), url);
}

/**
 * Errors as pino writes them, less the bound values of a failed query
 * (TypeORM's QueryFailedError carries them): they hold callers' data
 * (`initial_context`, phone numbers, transcripts). The SQL text stays.
 */
function errorForLog(error: Error): Record<string, unknown> {
  const serialized = pino.stdSerializers.err(error) as unknown as Record<string, unknown>;
  delete serialized.parameters;
  return serialized;
}

interface LoggedRequest {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

/** One JSON logger per process; `app` names the process in every line. */
export function createRootLogger(app: string, level: string, destination?: DestinationStream): PinoLogger {
  return pino(
    {
      level,
      base: { app, pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
      // Replaces Fastify's own request serializer (it takes the logger's), which writes the URL as sent.
      serializers: {
        err: errorForLog,
        req: (request: LoggedRequest) => ({
          method: request.method,
          url: urlForLog(request.url),
          host: request.host,
          remoteAddress: request.ip,
          remotePort: request.socket?.remotePort,
        }),
      },
    },
    destination,
  );
}
