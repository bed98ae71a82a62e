import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../support/free-port';
import { deleteQueueKeys, dropDatabase } from '../support/test-resource-lifecycle';
import { scratchDatabaseUrl, testRunResources } from '../support/test-run-id';
import { BUILD_TIMEOUT_MS, buildAppsOnce } from '../support/build-apps-once';
import { runCli } from './support/run-command';
import { spawnApp } from './support/spawn-app';

/**
 * Nest initializes the modules before it binds the port: a dialer whose
 * health port is taken has started its workers, which may have taken jobs,
 * by the time its start fails. It closes them before it exits.
 */
describe('a dialer that cannot bind its health port', () => {
  const databaseUrl = scratchDatabaseUrl('failedstart');
  const queuePrefix = testRunResources().queuePrefix.replace(/\}$/, '-failedstart}');
  const artifactsDir = mkdtempSync(join(tmpdir(), 'va-failed-start-'));
  let taken: Server;
  let takenPort: number;

  beforeAll(async () => {
    await buildAppsOnce();
    await dropDatabase(databaseUrl);
    expect((await runCli(['migrate'], databaseUrl)).code).toBe(0);
    takenPort = await freePort();
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(takenPort, '127.0.0.1', resolve));
  }, BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await new Promise<void>((resolve) => taken.close(() => resolve()));
    await dropDatabase(databaseUrl);
    await deleteQueueKeys(queuePrefix);
    rmSync(artifactsDir, { recursive: true, force: true });
  });

  it('says why, closes its workers, and exits 1', async () => {
    const { child, output, exited } = await spawnApp(
      'dialer',
      { databaseUrl, queuePrefix, artifactsDir },
      { env: { HOST: '127.0.0.1', DIALER_HEALTH_PORT: String(takenPort) } },
    );
    try {
      expect(await exited).toEqual({ code: 1, signal: null });
      expect(output()).toContain('dialer failed to start');
      expect(output()).toContain('EADDRINUSE');
      // The workers were paused and closed (WorkerShutdown) before the exit. (Not compared with the failure's place in
      // the output: one is on stdout, the other on stderr, and the two pipes arrive here in no promised order.)
      expect(output()).toContain('"msg":"workers drained"');
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  }, 60_000);

  it.each(['api', 'dialer'] as const)(
    'refuses a REDIS_URL database that Redis does not have, before it takes a job or a request (%s)',
    async (app) => {
      const { child, output, exited } = await spawnApp(app, { databaseUrl, queuePrefix, artifactsDir }, { env: { REDIS_URL: 'redis://127.0.0.1:6379/99' } });
      try {
        expect(await exited).toEqual({ code: 1, signal: null });
        expect(output()).toContain('Invalid configuration');
        expect(output()).toContain('REDIS_URL selects database 99, which this Redis refuses');
        // Stopped before its modules: no worker was started to take jobs from database 0.
        expect(output()).not.toContain('workers drained');
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    },
    60_000,
  );
});
