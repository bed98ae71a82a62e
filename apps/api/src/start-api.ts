import 'reflect-metadata';
import { SignalShutdown, startApp } from '@app/common';
import { createApiApp } from './create-api-app';

/** Boots the API; `shutdown` already holds any SIGTERM or SIGINT that came while the modules loaded. */
export function startApi(shutdown: SignalShutdown): Promise<void> {
  return startApp('api', shutdown, createApiApp, async (app, config, logger) => {
    await app.listen(config.apiPort, config.apiHost);
    logger.info({ port: config.apiPort, docs: `${config.publicBaseUrl}/docs` }, 'api listening');
  });
}
