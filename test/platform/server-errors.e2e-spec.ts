import { EventEmitter } from 'node:events';
import type { Logger as PinoLogger } from 'pino';
import type { INestApplication } from '@nestjs/common';
import { logServerErrors, startApp } from '@app/common';
import { createApiApp } from '../../apps/api/src/create-api-app';
import { TEST_SECRETS_KEY, testConfig } from '../support/test-config';
import { startTestApps, TestApps } from '../support/test-apps';

describe("a listening server's errors", () => {
  let apps: TestApps;
  beforeAll(async () => {
    apps = await startTestApps({ dialer: false });
  });
  afterAll(() => apps.close());

  it('find no listener once Nest and Fastify listen (so one would end the process), and are logged once one is added', async () => {
    const server = apps.api.getHttpServer() as EventEmitter;
    const emfile = Object.assign(new Error('accept EMFILE'), { code: 'EMFILE' });
    expect(server.listenerCount('error')).toBe(0);
    expect(() => server.emit('error', emfile)).toThrow('accept EMFILE');

    const error = jest.fn();
    logServerErrors(server, { error } as unknown as PinoLogger);
    expect(() => server.emit('error', emfile)).not.toThrow();
    expect(error).toHaveBeenCalledWith({ err: emfile, left_out: 0 }, 'HTTP server error; still listening');
    // Still answering.
    expect((await apps.client.get('/health/live')).status).toBe(200);
  });

  it('get their listener from the apps\' own start (startApp), once the app listens', async () => {
    const env = { ...process.env };
    Object.assign(process.env, { SECRETS_KEY: TEST_SECRETS_KEY, LOG_LEVEL: 'silent', PUBLIC_BASE_URL: 'http://127.0.0.1' });
    let started: INestApplication | undefined;
    try {
      const shutdown = { attach: jest.fn(), startFailed: () => false };
      await startApp(
        'api',
        shutdown,
        async (_config, logger) => (started = await createApiApp(testConfig(), logger)),
        async (app) => {
          await app.listen(0, '127.0.0.1');
        },
      );
      const server = started!.getHttpServer() as EventEmitter;
      expect(server.listenerCount('error')).toBe(1);
      expect(() => server.emit('error', Object.assign(new Error('accept EMFILE'), { code: 'EMFILE' }))).not.toThrow();
    } finally {
      process.env = env;
      await started?.close();
    }
  });
});

