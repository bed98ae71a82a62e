import 'reflect-metadata';
import { closeOnSignal, createRootLogger } from '@app/common';
import { ConfigError, loadAppConfig } from '@app/config';
import { createApiApp } from './create-api-app';

/** Boots the API; `shutdown` already holds any SIGTERM or SIGINT that came while the modules loaded. */
export async function startApi(shutdown: ReturnType<typeof closeOnSignal>): Promise<void> {
  try {
    const config = loadAppConfig();
    const logger = createRootLogger('api', config.logLevel);
    const app = await createApiApp(config, logger);
    shutdown.attach(app, logger);
    await app.listen(config.apiPort, config.apiHost);
    logger.info({ port: config.apiPort, docs: `${config.publicBaseUrl}/docs` }, 'api listening');
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
    } else {
      process.stderr.write(`api failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    }
    process.exit(1);
  }
}
