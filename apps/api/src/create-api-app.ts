import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import type { onRequestAsyncHookHandler } from 'fastify';
import type { Logger as PinoLogger } from 'pino';
import { PinoNestLogger } from '@app/common';
import { AppConfig } from '@app/config';
import { AgentSessionsService } from './agent-sessions/agent-sessions.service';
import { AppModule } from './app.module';
import { bodyMediaTypeRefusal } from './body-media-type';

/** Request bodies above this answer 413 before any handler runs. */
export const BODY_LIMIT_BYTES = 1024 * 1024;
const RECORDING_LIMIT_BYTES = 100 * 1024 * 1024;
const REQUEST_ID_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;
const RECORDING_ROUTE = '/api/v1/agent-sessions/:token/recording';

/**
 * Builds the gateway on Fastify, with everything production and tests share:
 * request ids, structured logs, body limit, OpenAPI at /docs, shutdown hooks.
 */
export async function createApiApp(config: AppConfig, logger: PinoLogger): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    bodyLimit: BODY_LIMIT_BYTES,
    loggerInstance: logger,
    trustProxy: true,
    requestIdHeader: false,
    genReqId: (request: IncomingMessage) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID_PATTERN.test(given) ? given : randomUUID();
    },
  });
  adapter.getInstance().addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    // Before the body is read: audio bodies may be up to RECORDING_LIMIT_BYTES, and a body of the wrong type is not parsed.
    const refusal = bodyMediaTypeRefusal(request.method, request.url, request.headers);
    if (refusal) {
      done(Object.assign(new Error(refusal), { statusCode: 415, code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' }));
      return;
    }
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

  // The recording upload's token and type are checked once the head has arrived, before its body is read.
  const sessions = app.get(AgentSessionsService);
  adapter.getInstance().addHook('onRoute', (route) => {
    if (route.method !== 'PUT' || route.url !== RECORDING_ROUTE) return;
    const admit: onRequestAsyncHookHandler = async (request) => {
      const { token } = request.params as { token: string };
      await sessions.admitRecording(token, request.headers['content-type']);
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
