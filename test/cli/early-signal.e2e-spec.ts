import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deleteQueueKeys, dropDatabase } from '../support/test-resource-lifecycle';
import { scratchDatabaseUrl, testRunResources } from '../support/test-run-id';
import { waitFor } from '../support/wait-for';
import { APP_MAINS, BUILD_TIMEOUT_MS, buildAppsOnce } from '../support/build-apps-once';
import { runCli } from './support/run-command';
import { spawnApp } from './support/spawn-app';

/** Reports on stderr when the process adds its first SIGTERM listener. */
const REPORT_SIGNAL_HANDLERS = join(__dirname, 'support/report-signal-handlers.js');

describe('a SIGTERM while an app is still loading', () => {
  const databaseUrl = scratchDatabaseUrl('signal');
  // Its own queues: a dialer on this run's shared prefix would also take jobs other test files left behind.
  const queuePrefix = testRunResources().queuePrefix.replace(/\}$/, '-signal}');
  const artifactsDir = mkdtempSync(join(tmpdir(), 'va-early-signal-'));

  beforeAll(async () => {
    await buildAppsOnce();
    await dropDatabase(databaseUrl);
    const migrated = await runCli(['migrate'], databaseUrl);
    expect(migrated.code).toBe(0);
  }, BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await dropDatabase(databaseUrl);
    await deleteQueueKeys(queuePrefix);
    rmSync(artifactsDir, { recursive: true, force: true });
  });

  it.each(Object.keys(APP_MAINS) as Array<keyof typeof APP_MAINS>)(
    'is held until the %s exists, then stops it cleanly with exit code 0',
    async (app) => {
      const { child, output, exited } = await spawnApp(app, { databaseUrl, queuePrefix, artifactsDir }, { nodeArgs: ['--require', REPORT_SIGNAL_HANDLERS] });

      try {
        // As soon as the handler is in (before the application's modules have loaded), not after a guessed delay.
        await waitFor(async () => (output().includes('test: SIGTERM listener added') ? true : undefined), {
          timeoutMs: 10_000,
          intervalMs: 2,
          what: `the ${app} to install its SIGTERM handler`,
        });
        // The handler came before the application's modules: a signal in that time is not lost.
        expect(output()).toContain('test: SIGTERM listener added, Nest loaded: false');
        expect(output()).not.toMatch(/started|listening/);
        child.kill('SIGTERM');

        expect(await exited).toEqual({ code: 0, signal: null });
        expect(output()).toMatch(/"msg":"stopped"/);
      } finally {
        // A failed expectation must not leave the app running.
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    },
    60_000,
  );
});
