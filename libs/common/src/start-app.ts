import type { INestApplication } from '@nestjs/common';
import type { Logger as PinoLogger } from 'pino';
import { AppConfig, ConfigError, loadAppConfig } from '@app/config';
import type { SignalShutdown } from './close-on-signal';
import { createRootLogger } from './create-root-logger';

/**
 * Boots one app: loads the configuration, builds the app, hands it to the
 * signal handling (`shutdown` holds any signal that came while the modules
 * loaded) and lets it listen. A failure to start is printed (a configuration
 * error as its message alone) and ends the process with exit code 1.
 */
export async function startApp<App extends INestApplication>(
  name: string,
  shutdown: SignalShutdown,
  build: (config: AppConfig, logger: PinoLogger) => Promise<App>,
  listen: (app: App, config: AppConfig, logger: PinoLogger) => Promise<void>,
): Promise<void> {
  try {
    const config = loadAppConfig();
    const logger = createRootLogger(name, config.logLevel);
    const app = await build(config, logger);
    shutdown.attach(app, logger);
    await listen(app, config, logger);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
    } else {
      process.stderr.write(`${name} failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    }
    process.exit(1);
  }
}
