import { EventEmitter } from 'node:events';
import type { Logger as PinoLogger } from 'pino';
import { logServerErrors } from './server-errors';

describe('logServerErrors', () => {
  it('logs a server error instead of throwing it, one in 10 s at most, counting those left out', () => {
    const server = new EventEmitter();
    const error = jest.fn();
    let now = 1_000;
    logServerErrors(server, { error } as unknown as PinoLogger, () => now);
    const emfile = Object.assign(new Error('accept EMFILE'), { code: 'EMFILE' });

    expect(() => server.emit('error', emfile)).not.toThrow();
    now += 5_000;
    server.emit('error', emfile);
    server.emit('error', emfile);
    now += 5_000;
    server.emit('error', emfile);

    expect(error.mock.calls).toEqual([
      [{ err: emfile, left_out: 0 }, 'HTTP server error; still listening'],
      [{ err: emfile, left_out: 2 }, 'HTTP server error; still listening'],
    ]);
  });
});
