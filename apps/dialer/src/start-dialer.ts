import 'reflect-metadata';
import { closeOnSignal, createRootLogger } from '@app/common';
import { ConfigError, loadAppConfig } from '@app/config';
import { createDialerApp } from './create-dialer-app';

/** Boots the dialer; `shutdown` already holds any SIGTERM or SIGINT that came while the modules loaded. */
export async function startDialer(shutdown: ReturnType<typeof closeOnSignal>): Promise<void> {
  try {
    const config = loadAppConfig();
    const logger = createRootLogger('dialer', config.logLevel);
    const app = await createDialerApp(config, logger);
    shutdown.attach(app, logger);
    await app.listen(config.dialerHealthPort, config.apiHost);
    logger.info({ health_port: config.dialerHealthPort, concurrency: config.dialerConcurrency }, 'dialer started');
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
    } else {
      process.stderr.write(`dialer failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    }
    process.exit(1);
  }
}
