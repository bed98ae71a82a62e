import 'reflect-metadata';
import { SignalShutdown, startApp } from '@app/common';
import { createDialerApp } from './create-dialer-app';

/** Boots the dialer; `shutdown` already holds any SIGTERM or SIGINT that came while the modules loaded. */
export function startDialer(shutdown: SignalShutdown): Promise<void> {
  return startApp('dialer', shutdown, createDialerApp, async (app, config, logger) => {
    await app.listen(config.dialerHealthPort, config.apiHost);
    logger.info({ health_port: config.dialerHealthPort, concurrency: config.dialerConcurrency }, 'dialer started');
  });
}
