import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { FastifyBodyParser, FastifyError, FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { Logger as PinoLogger } from 'pino';
import { DomainError, ErrorBody, PinoNestLogger } from '@app/common';
import { AppConfig } from '@app/config';
import { checkRedisDatabase, GATEWAY_CHECK_WAIT_MS } from '@app/queue';
import { AgentSessionsService } from './agent-sessions/agent-sessions.service';
import { RECORDING_LIMIT_BYTES, RecordingUploads } from './agent-sessions/recording-uploads';
import { AppModule } from './app.module';
import { ApiKeyAuthenticator } from './auth/api-key-authenticator.service';
import { ApiKeyRouteConfig } from './auth/api-key-routes.decorator';
import { checkRequestKey } from './auth/api-key.guard';
import { bodyMediaTypeRefusal, hasBody } from './body-media-type';
import { isClosing, lingerOnClose } from './lingering-close';
import { originForm } from './request-target';

/** Request bodies above this answer 413 before any handler runs. */
export const BODY_LIMIT_BYTES = 1024 * 1024;
const REQUEST_ID_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;
const RECORDING_ROUTE = '/api/v1/agent-sessions/:token/recording';
/**
 * A carrier's callback body above this answers 413 before it is read on.
 * Real ones are a few KiB; the signature check reads every field of a body
 * before it can tell it is not the carrier's, so the limit bounds what an
 * unsigned one can cost.
 */
export const WEBHOOK_BODY_LIMIT_BYTES = 64 * 1024;
const WEBHOOK_ROUTES = '/api/v1/telephony/';

/** What the router answers a URL it cannot route: malformed percent-encoding, or a path segment past its length limit. */
function routerRefusal(fastifyCode: string, requestId: string): ErrorBody {
  if (fastifyCode === 'FST_ERR_MAX_PARAM_LENGTH') {
    return { statusCode: 414, code: 'uri_too_long', message: 'A path segment of the URL is over 100 characters', request_id: requestId };
  }
  return { statusCode: 400, code: 'bad_request', message: 'The URL is malformed: its path is not valid percent-encoded UTF-8', request_id: requestId };
}

/**
 * What Node refuses before any route runs (a request that is not HTTP,
 * headers too large, one that did not arrive within HTTP_REQUEST_TIMEOUT_MS)
 * is answered with the error body every other error has, not Fastify's own.
 * Written to the socket, which is then closed, as Fastify does.
 */
export function clientErrorAnswer(error: { code?: string }): string {
  const [statusCode, code, message] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'request_timeout', 'The request did not arrive in time']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'headers_too_large', 'The request headers are too large']
        : [400, 'bad_request', 'The request is not valid HTTP'];
  const body = JSON.stringify({ statusCode, code, message, request_id: randomUUID() } satisfies ErrorBody);
  return (
    `HTTP/1.1 ${statusCode} ${STATUS_CODES[statusCode]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

const PROTOTYPE_KEY_REFUSED =
  'The body has a "__proto__" key, or a "constructor" object holding a "prototype" key: neither is taken, at any depth';

function isJson(text: string): boolean {
  try {
    // As the parser reads it: a byte-order mark first is skipped.
    JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
    return true;
  } catch {
    return false;
  }
}

/**
 * The JSON body parser: Fastify's own (the same prototype-poisoning settings
 * and malformed-JSON errors), but for bytes that are not UTF-8, which
 * decoding would turn into U+FFFD and store as if sent: those answer 400
 * `invalid_json`. An empty body is no body, as if no type were declared:
 * many HTTP clients declare JSON on every request, a publish, a cancel or a
 * DELETE included, and a route that takes a body then names what is missing.
 * It runs on every trigger, so it costs one validation pass, one decode and
 * one parse; Nest's wrapper keeps `rawBody` and the limit.
 */
function utf8JsonParser(fastify: FastifyInstance): FastifyBodyParser<Buffer> {
  const { onProtoPoisoning, onConstructorPoisoning } = fastify.initialConfig;
  const parseJson = fastify.getDefaultJsonParser(onProtoPoisoning ?? 'error', onConstructorPoisoning ?? 'error');
  return (request, body, done) => {
    if (body.length === 0) {
      done(null, undefined);
      return;
    }
    if (!isUtf8(body)) {
      done(new DomainError(400, 'invalid_json', 'The body is not valid UTF-8: send JSON text encoded in UTF-8'), undefined);
      return;
    }
    const text = body.toString('utf8');
    void parseJson(request, text, (error, parsed) => {
      // Fastify answers its prototype-poisoning guard as malformed JSON; valid JSON refused is that guard, and said so.
      done(error && isJson(text) ? new DomainError(400, 'invalid_json', PROTOTYPE_KEY_REFUSED) : error, parsed);
    });
  };
}

/**
 * A refusal made on the request's head (when there is one): answered with
 * `Connection: close` if the body has not all arrived. Kept alive, the
 * connection would wait for the rest of a body no one reads, as an idle
 * connection between requests (Fastify's keep-alive timeout, 72 s) rather
 * than HTTP_IDLE_TIMEOUT_MS.
 */
function refusedOnHead<E extends Error>(request: FastifyRequest, reply: FastifyReply, refusal: E | undefined): E | undefined {
  if (refusal && !request.raw.complete) void reply.header('connection', 'close');
  return refusal;
}

/** The 415 for a body whose declared type the route does not take, answered before the body is read; else undefined. */
function mediaTypeRefusal(request: FastifyRequest): FastifyError | undefined {
  const refusal = bodyMediaTypeRefusal(request.method, request.url, request.headers);
  return refusal ? Object.assign(new Error(refusal), { statusCode: 415, code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', name: 'FastifyError' }) : undefined;
}

/**
 * Builds the gateway on Fastify, with everything production and tests share:
 * request ids, structured logs, body limit, OpenAPI at /docs, shutdown hooks.
 */
export async function createApiApp(config: AppConfig, logger: PinoLogger): Promise<NestFastifyApplication> {
  await checkRedisDatabase(config.redisUrl, GATEWAY_CHECK_WAIT_MS);
  const adapter = new FastifyAdapter({
    bodyLimit: BODY_LIMIT_BYTES,
    // Fastify sets neither by default: a connection could hold a request (and an upload its budget) forever.
    connectionTimeout: config.httpIdleTimeoutMs,
    requestTimeout: config.httpRequestTimeoutMs,
    loggerInstance: logger,
    trustProxy: true,
    rewriteUrl: (request: IncomingMessage) => originForm(request.url ?? '/'),
    clientErrorHandler: (error: Error & { code?: string }, socket: Socket) => {
      // A connection reset has nothing left to answer on.
      if (error.code !== 'ECONNRESET' && !socket.destroyed && socket.writable) socket.write(clientErrorAnswer(error));
      socket.destroy(error);
    },
    requestIdHeader: false,
    genReqId: (request: IncomingMessage) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID_PATTERN.test(given) ? given : randomUUID();
    },
    // The router refuses these before any hook or filter runs: they get the same body and request id as every other error.
    frameworkErrors: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      const body = routerRefusal(error.code, String(request.id));
      void reply.status(body.statusCode).header('x-request-id', request.id).header('content-type', 'application/json; charset=utf-8').send(body);
    },
  });
  // The app's, once it is built: no request arrives before.
  const keys: { authenticator?: ApiKeyAuthenticator } = {};
  adapter.getInstance().addHook('onRequest', (request, reply, done) => {
    if (isClosing(request.raw.socket)) {
      // Sent behind a body refused with `Connection: close`: not run, and not answered.
      reply.hijack();
      request.raw.socket.destroy();
      return;
    }
    void reply.header('x-request-id', request.id);
    // Before the body is read: the API key of a route that needs one (without a valid key, 401 whatever the body, which
    // is not read), then the body's type (audio bodies may be up to RECORDING_LIMIT_BYTES, and one of the wrong type is
    // not parsed). A request with neither a body nor a type (a read) has its key checked by the route's guard: there
    // is nothing to parse.
    const needsKey = (request.routeOptions.config as ApiKeyRouteConfig | undefined)?.apiKey;
    if (!needsKey || (!hasBody(request.headers) && request.headers['content-type'] === undefined)) {
      done(refusedOnHead(request, reply, mediaTypeRefusal(request)));
      return;
    }
    checkRequestKey(keys.authenticator!, request, needsKey.role).then(
      () => done(refusedOnHead(request, reply, mediaTypeRefusal(request))),
      (error: Error) => done(refusedOnHead(request, reply, error)),
    );
  });

  // A request refused before its body was all read (on its head, or by the body parser past its limit: 413) is
  // answered with `Connection: close`: the connection then reads what its client still sends before it closes.
  adapter.getInstance().addHook('onError', (request, reply, _error, done) => {
    if (!request.raw.complete && reply.getHeader('connection') === 'close') {
      lingerOnClose(request.raw.socket, { idleMs: config.httpIdleTimeoutMs });
    }
    done();
  });

  // HTTP_IDLE_TIMEOUT_MS is for a request that stops arriving and a response its client stops reading. Once the
  // body is in, the handler's own work (bounded: statements and carrier calls give up after 15 s) moves no bytes:
  // it must not cost the connection, nor the client the answer of a trigger whose run is already stored.
  adapter.getInstance().addHook('preHandler', (_request, reply, done) => {
    reply.raw.on('timeout', (socket: Socket) => {
      if (reply.raw.headersSent) socket.destroy();
    });
    done();
  });

  // Recordings uploaded by the agent runtime arrive as raw audio.
  adapter
    .getInstance()
    .addContentTypeParser(/^audio\//, { parseAs: 'buffer', bodyLimit: RECORDING_LIMIT_BYTES }, (_request, body, done) => done(null, body));

  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config), adapter, {
    logger: new PinoNestLogger(logger),
    bufferLogs: false,
    abortOnError: false,
    // Carrier webhook signatures are over the exact bytes sent.
    rawBody: true,
  });
  keys.authenticator = app.get(ApiKeyAuthenticator);
  // In place of Nest's default JSON parser, before `init` would register it.
  app.useBodyParser('application/json', { bodyLimit: BODY_LIMIT_BYTES }, utf8JsonParser(adapter.getInstance()));

  // Carrier callbacks get a body limit of their own. The recording upload's token and type are checked once the head
  // has arrived, before its body is read, and the bodies held at once are bounded (`RecordingUploads`: each is read
  // whole into memory).
  const sessions = app.get(AgentSessionsService);
  const uploads = app.get(RecordingUploads);
  adapter.getInstance().addHook('onRoute', (route) => {
    if (route.url.startsWith(WEBHOOK_ROUTES)) route.bodyLimit = WEBHOOK_BODY_LIMIT_BYTES;
    if (route.method !== 'PUT' || route.url !== RECORDING_ROUTE) return;
    const admit: onRequestAsyncHookHandler = (request, reply) =>
      admitUpload(request, reply).catch((error: Error) => {
        // Another upload of the run arriving (here or on another gateway), or the gateway's budget full: retry shortly.
        if (error instanceof DomainError && error.status === 429) void reply.header('retry-after', '5');
        throw refusedOnHead(request, reply, error);
      });
    const admitUpload = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
      const { token } = request.params as { token: string };
      const { runId, admittedAt } = await sessions.admitRecording(token, request.headers['content-type'], request.headers['content-encoding'], (id) =>
        uploads.assertRoom(id, request.raw),
      );
      // Noted on the run, for the dialer to wait for: forgotten again as soon as it is known to store nothing.
      const storedNothing = () => sessions.forgetRecordingAdmission(runId, admittedAt);
      // Gone while it was admitted: its connection's `close` has passed, and would never give back what is taken below.
      if (request.raw.socket?.destroyed) return void storedNothing();
      try {
        uploads.admit(runId, request.raw, reply.raw, storedNothing);
      } catch (error) {
        await storedNothing();
        throw error;
      }
    };
    route.onRequest = [admit, ...[route.onRequest ?? []].flat()];
  });

  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('Voice agent call API')
      .setDescription('Starts outbound voice-agent calls from API triggers and reads back the record of each call.')
      .setVersion('1')
      .addApiKey({ type: 'apiKey', name: 'X-API-Key', in: 'header' }, 'api-key')
      .addBearerAuth({ type: 'http', scheme: 'bearer' }, 'bearer')
      .build(),
  );
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs-json' });
  return app;
}
