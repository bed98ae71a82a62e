import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TcpProxy } from '../support/tcp-proxy';
import { deleteQueueKeys, dropDatabase } from '../support/test-resource-lifecycle';
import { scratchDatabaseUrl, testRunResources } from '../support/test-run-id';
import { waitFor } from '../support/wait-for';
import { BUILD_TIMEOUT_MS, buildAppsOnce } from '../support/build-apps-once';
import { runCli } from './support/run-command';
import { spawnApp } from './support/spawn-app';

/**
 * A dialer told to stop while Redis is away exits. Its periodic tasks (the
 * dispatcher, the reaper, the key sweeper) were then stuck on commands
 * waiting for Redis to come back, and the stop waited for them: the process
 * stayed up until Redis returned or it was killed.
 */
describe('a dialer stopped while Redis is away', () => {
  const databaseUrl = scratchDatabaseUrl('redisaway');
  const queuePrefix = testRunResources().queuePrefix.replace(/\}$/, '-redisaway}');
  const artifactsDir = mkdtempSync(join(tmpdir(), 'va-redis-away-stop-'));
  const redis = new TcpProxy('127.0.0.1', 6379);

  beforeAll(async () => {
    await buildAppsOnce();
    await dropDatabase(databaseUrl);
    expect((await runCli(['migrate'], databaseUrl)).code).toBe(0);
  }, BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await redis.stop();
    await dropDatabase(databaseUrl);
    await deleteQueueKeys(queuePrefix);
    rmSync(artifactsDir, { recursive: true, force: true });
  });

  it('exits on SIGTERM, though its periodic tasks wait on Redis', async () => {
    const port = await redis.start();
    const { child, output, exited } = await spawnApp(
      'dialer',
      { databaseUrl, queuePrefix, artifactsDir },
      { env: { REDIS_URL: `redis://127.0.0.1:${port}`, SHUTDOWN_GRACE_MS: '1000' } },
    );
    try {
      await waitFor(async () => (output().includes('"msg":"dialer started"') ? true : undefined), { timeoutMs: 20_000, what: 'the dialer to start' });
      await redis.cut();
      // Past the dispatcher's interval (1 s) and the reaper's: their next rounds wait on their lease's command.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const outcome = await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(() => resolve('still running'), 30_000)))]);
      clearTimeout(timer);
      expect(outcome).toEqual({ code: 0, signal: null });
      expect(output()).toMatch(/"msg":"stopped"/);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  }, 60_000);
});
