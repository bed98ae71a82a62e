import type { INestApplication } from '@nestjs/common';
import type { Logger as PinoLogger } from 'pino';
import { closeOnSignal } from './close-on-signal';

describe('closeOnSignal', () => {
  const logger = { info: jest.fn(), error: jest.fn() } as unknown as PinoLogger;
  const { error: loggedError } = logger as unknown as { error: jest.Mock };
  let added: Array<{ signal: NodeJS.Signals; listener: NodeJS.SignalsListener }> = [];
  let exit: jest.SpyInstance;

  /** Installs the handling, noting the listeners it adds so that they are removed after the test. */
  const install = () => {
    const before = new Map((['SIGTERM', 'SIGINT', 'SIGHUP'] as const).map((signal) => [signal, process.listeners(signal)]));
    const shutdown = closeOnSignal();
    for (const [signal, listeners] of before) {
      for (const listener of process.listeners(signal)) if (!listeners.includes(listener)) added.push({ signal, listener });
    }
    return shutdown;
  };
  const appClosing = () => {
    let finish: () => void = () => undefined;
    const close = jest.fn(() => new Promise<void>((resolve) => (finish = resolve)));
    return { app: { close } as unknown as INestApplication, close, finish: () => finish() };
  };
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  beforeEach(() => {
    exit = jest.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
  });
  afterEach(() => {
    for (const { signal, listener } of added) process.removeListener(signal, listener);
    added = [];
    exit.mockRestore();
  });

  it('closes the app on SIGTERM and exits 0 once it has closed', async () => {
    const shutdown = install();
    const { app, close, finish } = appClosing();
    shutdown.attach(app, logger, 60_000);

    process.emit('SIGTERM', 'SIGTERM');
    expect(close).toHaveBeenCalledTimes(1);
    finish();
    await settle();
    expect(exit).toHaveBeenCalledWith(0);
  });

  it('gives a close that does not finish up once its time is over, and exits 1', async () => {
    jest.useFakeTimers();
    try {
      const shutdown = install();
      const { app, close } = appClosing();
      shutdown.attach(app, logger, 45_000);

      process.emit('SIGTERM', 'SIGTERM');
      expect(close).toHaveBeenCalledTimes(1);
      jest.advanceTimersByTime(44_999);
      expect(exit).not.toHaveBeenCalled();
      jest.advanceTimersByTime(1);
      expect(exit).toHaveBeenCalledWith(1);
      expect(loggedError).toHaveBeenCalledWith({ within_ms: 45_000 }, 'shutdown did not finish in time; exiting without it');
    } finally {
      jest.useRealTimers();
    }
  });

  it('leaves no deadline behind a close that finished', async () => {
    jest.useFakeTimers();
    try {
      const shutdown = install();
      const { app, finish } = appClosing();
      shutdown.attach(app, logger, 45_000);
      process.emit('SIGTERM', 'SIGTERM');
      finish();
      await Promise.resolve();
      await Promise.resolve();
      expect(exit).toHaveBeenCalledWith(0);
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });

  it('closes the app the same way when its terminal goes away (SIGHUP), rather than dying mid-dial', async () => {
    const shutdown = install();
    const { app, close, finish } = appClosing();
    shutdown.attach(app, logger, 60_000);

    process.emit('SIGHUP', 'SIGHUP');
    expect(close).toHaveBeenCalledTimes(1);
    finish();
    await settle();
    expect(exit).toHaveBeenCalledWith(0);
  });

  it('leaves an app whose start failed to its starter: a signal then closes nothing and exits nothing', async () => {
    const shutdown = install();
    const { app, close } = appClosing();
    shutdown.attach(app, logger, 60_000);

    expect(shutdown.startFailed()).toBe(false);
    process.emit('SIGTERM', 'SIGTERM');
    await settle();
    expect(close).not.toHaveBeenCalled();
    expect(exit).not.toHaveBeenCalled();
  });

  it("tells the starter of a failed start that a signal's close is already under way, which then exits 1", async () => {
    const shutdown = install();
    const { app, close, finish } = appClosing();
    shutdown.attach(app, logger, 60_000);
    process.emit('SIGTERM', 'SIGTERM');

    expect(shutdown.startFailed()).toBe(true);
    expect(close).toHaveBeenCalledTimes(1);
    finish();
    await settle();
    expect(exit).toHaveBeenCalledWith(1);
  });
});
