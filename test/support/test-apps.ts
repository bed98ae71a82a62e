import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { createRootLogger } from '@app/common';
import { AppConfig } from '@app/config';
import { createApiApp } from '../../apps/api/src/create-api-app';
import { CallEventsProcessor } from '../../apps/dialer/src/call-events/call-events.processor';
import { PlaceCallProcessor } from '../../apps/dialer/src/calls/place-call.processor';
import { createDialerApp } from '../../apps/dialer/src/create-dialer-app';
import { ApiClient } from './api-client';
import { freePort } from './free-port';
import { testConfig } from './test-config';

export interface TestApps {
  config: AppConfig;
  /** Starts one more dialer process-equivalent against the same Postgres and Redis. */
  addDialer(env?: Record<string, string>): Promise<NestFastifyApplication>;
  api: NestFastifyApplication;
  dialer: NestFastifyApplication | null;
  baseUrl: string;
  client: ApiClient;
  dataSource: DataSource;
  close(): Promise<void>;
}

/**
 * Boots the real API (listening on a loopback port) and, unless told not to,
 * the real dialer, against this run's Postgres database and Redis prefix.
 */
export async function startTestApps(options: { dialer?: boolean; env?: Record<string, string> } = {}): Promise<TestApps> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const config = testConfig({ PORT: String(port), PUBLIC_BASE_URL: baseUrl, ...options.env });
  const logger = createRootLogger('test', config.logLevel);
  const api = await createApiApp(config, logger);
  await api.listen(port, '127.0.0.1');
  const dialers: NestFastifyApplication[] = [];
  const addDialer = async (env: Record<string, string> = {}) => {
    const dialerConfig = { ...testConfig({ PORT: String(port), PUBLIC_BASE_URL: baseUrl, ...options.env, ...env }) };
    const app = await createDialerApp(dialerConfig, logger);
    await app.init();
    // A test may stop a dialer itself (a shutdown under test): closing the apps afterwards does not close it again
    // (Nest runs its whole shutdown again on a second close). A proxy, since Nest's own proxy of the app does not
    // keep a `close` assigned to it.
    let closing: Promise<void> | null = null;
    const closeOnce = () => (closing ??= app.close());
    const dialer = new Proxy(app, { get: (target, prop, receiver) => (prop === 'close' ? closeOnce : Reflect.get(target, prop, receiver)) });
    dialers.push(dialer);
    return dialer;
  };
  const dialer = options.dialer === false ? null : await addDialer();
  return {
    addDialer,
    config,
    api,
    dialer,
    baseUrl,
    client: new ApiClient(baseUrl),
    dataSource: api.get(DataSource),
    async close() {
      for (const app of dialers) await app.close();
      await api.close();
    },
  };
}

/**
 * The API and a dialer whose workers are paused: a test drives the dialer's
 * `CallPlacer` attempt by attempt, the way BullMQ would call it, and no
 * worker takes the jobs meanwhile.
 */
export async function startTestAppsWithPausedWorkers(env: Record<string, string> = {}): Promise<TestApps> {
  const apps = await startTestApps({ env });
  await apps.dialer!.get(PlaceCallProcessor).worker.pause(true);
  await apps.dialer!.get(CallEventsProcessor).worker.pause(true);
  return apps;
}
