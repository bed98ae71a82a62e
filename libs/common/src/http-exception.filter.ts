import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { urlForLog } from './create-root-logger';
import { isDatabaseUnavailable } from './database-unavailable';
import { isRedisUnavailable } from './redis-unavailable';
import { isStorageUnavailable } from './storage-unavailable';
import { DomainError } from './domain-error';
import { ErrorBody } from './error-body';
import { isUnstorableValue } from './unstorable-value';
import { LogLimiter } from './log-limiter';

const CODES_BY_STATUS: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  410: 'gone',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable_entity',
  429: 'too_many_requests',
  503: 'service_unavailable',
};

/** Fastify's own client errors (body parsing) keep their 4xx and get a stable code. */
const FASTIFY_CODES: Record<string, string> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'bad_request',
};

/**
 * The 503s that waiting mends (a dependency away or busy, a render that ran
 * out of time), answered with `Retry-After: 1`. Not `credentials_unreadable`:
 * that needs an operator (the credentials stored again, or the SECRETS_KEY that
 * sealed them), and a client told to come back in a second would only repeat it.
 */
const RETRY_SOON: ReadonlySet<string> = new Set(['service_unavailable', 'agent_render_failed', 'webhook_in_progress']);
/** One line per message of those 503s this often at most, with the count of the requests left out. */
const RETRY_SOON_LOG_EVERY_MS = 10_000;
const RETRY_SOON_LOGS_KEPT = 100;

/**
 * Maps every error to `{statusCode, code, message, request_id}`. Anything that
 * is not a known client error answers a generic 500 and is logged in full.
 */
@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpExceptionFilter');
  /** One per 503 message (a fixed few): a dependency away answers every request so, and clients retry each second. */
  private readonly retrySoonLogs = new Map<string, LogLimiter>();

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<FastifyRequest>();
    const reply = http.getResponse<FastifyReply>();
    const body = this.toBody(exception, String(request.id ?? ''));
    if (body.statusCode >= 500) {
      const fields = { err: exception, request_id: body.request_id, method: request.method, url: urlForLog(request.url) };
      if (RETRY_SOON.has(body.code)) {
        // A condition that passes (Postgres or Redis away, a full disk): a warning, one a message per 10 s at most.
        const leftOut = this.retrySoonLog(body.message).admit();
        if (leftOut !== null) this.logger.warn({ ...fields, left_out: leftOut }, `request answered ${body.statusCode} ${body.code}: ${body.message}`);
      } else {
        this.logger.error(fields, 'request failed');
      }
    }
    if (RETRY_SOON.has(body.code)) void reply.header('retry-after', '1');
    void reply.status(body.statusCode).header('content-type', 'application/json; charset=utf-8').send(body);
  }

  private toBody(exception: unknown, requestId: string): ErrorBody {
    if (exception instanceof DomainError) {
      return this.body(exception.status, exception.code, exception.message, requestId, exception.details);
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const response = exception.getResponse();
      const message = this.messageOf(response) ?? exception.message;
      const code = typeof response === 'object' && response !== null && 'code' in response
        ? String((response as { code: unknown }).code)
        : (fastifyCodeOf(exception.cause) ?? CODES_BY_STATUS[status] ?? (status >= 500 ? 'internal_error' : 'bad_request'));
      if (status === 503) {
        // Health checks: say which dependency is down.
        return this.body(503, 'service_unavailable', 'A dependency is unavailable', requestId, response);
      }
      if (status >= 500) return this.internal(requestId);
      return this.body(status, code, message, requestId);
    }
    const fastifyError = exception as { code?: string; statusCode?: number; message?: string };
    if (
      typeof fastifyError?.statusCode === 'number' &&
      fastifyError.statusCode >= 400 &&
      fastifyError.statusCode < 500
    ) {
      const code = fastifyCodeOf(fastifyError) ?? CODES_BY_STATUS[fastifyError.statusCode] ?? 'bad_request';
      return this.body(fastifyError.statusCode, code, fastifyError.message ?? 'Bad request', requestId);
    }
    if (isDatabaseUnavailable(exception)) {
      return this.body(503, 'service_unavailable', 'The database is unavailable; retry shortly', requestId);
    }
    if (isRedisUnavailable(exception)) {
      return this.body(503, 'service_unavailable', 'The queue is unavailable; retry shortly', requestId);
    }
    if (isStorageUnavailable(exception)) {
      // Logged in full as every 5xx is: a disk that stays full needs its operator. Worded for sockets too: a process
      // out of file handles fails a connect with the same EMFILE.
      return this.body(503, 'service_unavailable', 'The server is out of a resource this needs (disk space, file handles); retry shortly', requestId);
    }
    if (isUnstorableValue(exception)) {
      this.logger.warn({ err: exception, request_id: requestId }, 'a value the database cannot store');
      return this.body(
        400,
        'validation_failed',
        'The request holds text the database cannot store: a NUL character, or in JSON an unpaired UTF-16 surrogate',
        requestId,
      );
    }
    return this.internal(requestId);
  }

  private retrySoonLog(message: string): LogLimiter {
    let limiter = this.retrySoonLogs.get(message);
    if (!limiter) {
      // Bounded all the same, should a message ever carry a detail of its own.
      if (this.retrySoonLogs.size >= RETRY_SOON_LOGS_KEPT) this.retrySoonLogs.clear();
      limiter = new LogLimiter(RETRY_SOON_LOG_EVERY_MS);
      this.retrySoonLogs.set(message, limiter);
    }
    return limiter;
  }

  private messageOf(response: string | object): string | undefined {
    if (typeof response === 'string') return response;
    const message = (response as { message?: unknown }).message;
    if (Array.isArray(message)) return message.join('; ');
    return typeof message === 'string' ? message : undefined;
  }

  private internal(requestId: string): ErrorBody {
    return this.body(HttpStatus.INTERNAL_SERVER_ERROR, 'internal_error', 'Internal server error', requestId);
  }

  private body(statusCode: number, code: string, message: string, requestId: string, details?: unknown): ErrorBody {
    const body: ErrorBody = { statusCode, code, message, request_id: requestId };
    if (details !== undefined) body.details = details;
    return body;
  }
}

/** Nest's Fastify adapter wraps Fastify's client errors in an HttpException whose cause is the original. */
function fastifyCodeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? FASTIFY_CODES[code] : undefined;
}
