import 'reflect-metadata';
import { ConfigError, loadAppConfig } from '@app/config';
import { closeOnSignal, createRootLogger } from '@app/common';
import { createApiApp } from './create-api-app';

async function main(): Promise<void> {
  const shutdown = closeOnSignal();
  const config = loadAppConfig();
  const logger = createRootLogger('api', config.logLevel);
  const app = await createApiApp(config, logger);
  shutdown.attach(app, logger);
  await app.listen(config.apiPort, config.apiHost);
  logger.info({ port: config.apiPort, docs: `${config.publicBaseUrl}/docs` }, 'api listening');
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(`api failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
  process.exit(1);
});
