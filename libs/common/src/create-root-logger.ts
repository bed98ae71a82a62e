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
  [/(\/downloads\/)[^?#]*/i, '$1[redacted]'],
  [/(\/agent-sessions\/)[^/?#]+/i, '$1[redacted]'],
  [/([?&](?:session_token|token|signature)=)[^&#]*/gi, '$1[redacted]'],
];

/**
 * A request URL as it may be logged: the tokens some URLs carry are replaced.
 * The router matches a path with its unreserved characters percent-decoded
 * (`/api/v1/%64ownloads/…` is the downloads route), so the patterns look at
 * the URL decoded the same way; one that cannot be decoded is cut at its first
 * escape, since what follows it cannot be told apart from a token.
 */
export function urlForLog(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  let readable: string;
  try {
    readable = decodeURI(url);
  } catch {
    readable = `${url.slice(0, url.indexOf('%'))}[redacted]`;
  }
  return URL_SECRETS.reduce((masked, [pattern, replacement]) => masked.replace(pattern, replacement), readable);
}

/**
 * What a failed query carries of the values sent with it: TypeORM's
 * QueryFailedError holds the bound `parameters`, and Postgres' error (copied
 * onto it, and kept as its `driverError`) a `detail` (a unique violation's
 * `Key (…)=(…)`) and a `where` (the JSON text it could not read). They hold
 * callers' data (`initial_context`, phone numbers, transcripts, keys).
 */
const CALLER_DATA_FIELDS = ['parameters', 'detail', 'where'];

/** Errors as pino writes them, less the values of a failed query (above). The SQL text and error code stay. */
function errorForLog(error: Error): Record<string, unknown> {
  return withoutCallerData(pino.stdSerializers.err(error) as unknown as Record<string, unknown>);
}

function withoutCallerData(serialized: Record<string, unknown>): Record<string, unknown> {
  for (const field of CALLER_DATA_FIELDS) delete serialized[field];
  // Nested errors (`driverError`, an aggregate's errors) are serialized copies of the same kind, changed in place;
  // any other object is the error's own and is left as it is.
  const serializedKind = Object.getPrototypeOf(serialized) as object;
  for (const value of Object.values(serialized)) {
    for (const nested of Array.isArray(value) ? value : [value]) {
      if (nested !== null && typeof nested === 'object' && Object.getPrototypeOf(nested) === serializedKind) {
        withoutCallerData(nested as Record<string, unknown>);
      }
    }
  }
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
