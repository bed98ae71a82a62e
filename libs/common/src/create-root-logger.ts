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
  [/([?&#](?:session_token|token|signature)=)[^&#]*/gi, '$1[redacted]'],
];

/** Letters, digits and `-._~`: what an escape may spell in a route's name or a parameter's without changing it. */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/**
 * A request URL as it may be logged: the tokens some URLs carry are replaced.
 * The router matches a path with its escapes decoded (`/api/v1/%64ownloads/…`
 * is the downloads route, and a query's `%74oken` is `token`), so the patterns
 * look at the URL with its escapes of unreserved characters decoded; other
 * escapes (`%2F`, `%25`, bytes past ASCII) stay as they came.
 */
export function urlForLog(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  const readable = url.replace(/%([0-9A-Fa-f]{2})/g, (escape, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : escape;
  });
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

/**
 * Errors as pino writes them, less the values of a failed query (above) and
 * the arguments of a failed Redis command. The SQL text, the command's name
 * and the error code stay.
 */
function errorForLog(error: Error): Record<string, unknown> {
  return withoutCallerData(pino.stdSerializers.err(error) as unknown as Record<string, unknown>);
}

/** The prototype of the copies pino's serializer makes of errors, found once. */
const SERIALIZED_ERROR = Object.getPrototypeOf(pino.stdSerializers.err(new Error('probe'))) as object;

function withoutCallerData(serialized: Record<string, unknown>): Record<string, unknown> {
  // What is not an error comes back as it was given: the caller's own object, written as it is and never changed.
  if (serialized === null || typeof serialized !== 'object' || Object.getPrototypeOf(serialized) !== SERIALIZED_ERROR) return serialized;
  for (const field of CALLER_DATA_FIELDS) delete serialized[field];
  // ioredis puts the command a reply refused on its error, arguments and all: an AUTH's or HELLO's password, a
  // queued job's data (callers' phone numbers and context). Its name says enough.
  const command = serialized.command as { name?: unknown } | null | undefined;
  if (command !== null && typeof command === 'object') serialized.command = { name: command.name };
  // Nested errors (`driverError`, an aggregate's errors) are serialized copies too, changed in place; any other
  // object is the error's own and is left as it is.
  for (const value of Object.values(serialized)) {
    for (const nested of Array.isArray(value) ? value : [value]) withoutCallerData(nested as Record<string, unknown>);
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
