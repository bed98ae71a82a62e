import { AppConfig, loadAppConfig } from '@app/config';
import { testRunResources } from './test-run-id';

export const TEST_SECRETS_KEY = '8f384663668a76474df90678209b3bf092a02a66ed06241a43c5dbd000581a8d';

/** The configuration the apps run with in tests: this run's database, prefix and directory. */
export function testConfig(overrides: Record<string, string> = {}): AppConfig {
  const { databaseUrl, queuePrefix, artifactsDir } = testRunResources();
  return loadAppConfig({
    NODE_ENV: 'test',
    DATABASE_URL: databaseUrl,
    DATABASE_POOL_SIZE: '4',
    REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: queuePrefix,
    ARTIFACTS_DIR: artifactsDir,
    SECRETS_KEY: TEST_SECRETS_KEY,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    PORT: '0',
    DIALER_HEALTH_PORT: '0',
    DIALER_CONCURRENCY: '20',
    // Well inside Jest's 30-s hook timeout: a dialer still closing when its suite's afterAll gives up would go on
    // taking the next suites' jobs from the shared queue.
    SHUTDOWN_GRACE_MS: '10000',
    ...overrides,
  });
}
