import type { EventEmitter } from 'node:events';
import type { INestApplication } from '@nestjs/common';
import type { Logger as PinoLogger } from 'pino';
import { AppConfig, ConfigError, configWarnings, loadAppConfig } from '@app/config';
import type { SignalShutdown } from './close-on-signal';
import { createRootLogger } from './create-root-logger';
import { logServerErrors } from './server-errors';
import { withTimeout } from './with-timeout';

/** Beyond the dialer's grace for dials in flight: what closing the rest (pools, queues) may take. */
const CLOSE_MARGIN_MS = 10_000;
/** Beyond every grace a close may wait out: the periodic tasks' stops, the pools' ends. */
const CLOSE_BACKSTOP_MARGIN_MS = 30_000;

/**
 * Boots one app: loads the configuration, builds the app, hands it to the
 * signal handling (`shutdown` holds any signal that came while the modules
 * loaded) and lets it listen. A failure to start is printed (a configuration
 * error as its message alone) and ends the process with exit code 1. An app
 * that was built is closed first, within SHUTDOWN_GRACE_MS and a margin:
 * `listen` initializes the modules before it binds the port, so a dialer
 * whose health port is taken has workers that already took jobs, and
 * exiting under them would cut off dials in flight.
 */
export async function startApp<App extends INestApplication>(
  name: string,
  shutdown: SignalShutdown,
  build: (config: AppConfig, logger: PinoLogger) => Promise<App>,
  listen: (app: App, config: AppConfig, logger: PinoLogger) => Promise<void>,
): Promise<void> {
  let built: { app: App; config: AppConfig } | null = null;
  try {
    const config = loadAppConfig();
    const logger = createRootLogger(name, config.logLevel);
    for (const warning of configWarnings(config)) logger.warn(warning);
    const app = await build(config, logger);
    built = { app, config };
    // A backstop for a close that hangs: past the dialer's grace for its dials, and the gateway's for a request under
    // way (an upload may take HTTP_REQUEST_TIMEOUT_MS), with room for the rest.
    const requestsMs = name === 'api' ? config.httpRequestTimeoutMs : 0;
    shutdown.attach(app, logger, config.shutdownGraceMs + requestsMs + CLOSE_BACKSTOP_MARGIN_MS);
    await listen(app, config, logger);
    logServerErrors(app.getHttpServer() as EventEmitter, logger);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
    } else {
      process.stderr.write(`${name} failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    }
    // A signal's close already under way exits by itself (0 once closed); otherwise this one, which no signal joins.
    if (built && shutdown.startFailed()) return;
    if (built) {
      // A close that fails, or does not finish in time, is printed; the exit code stays 1.
      await withTimeout(built.app.close(), built.config.shutdownGraceMs + CLOSE_MARGIN_MS, 'closing after the failed start').catch((failure: unknown) => {
        process.stderr.write(`closing after the failed start failed too: ${failure instanceof Error ? failure.message : String(failure)}\n`);
      });
    }
    process.exit(1);
  }
}
