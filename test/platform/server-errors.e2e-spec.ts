import { EventEmitter } from 'node:events';
import type { Logger as PinoLogger } from 'pino';
import { logServerErrors } from '@app/common';
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
});
