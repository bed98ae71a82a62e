import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { baseRunResources } from './test-run-id';
import { REPO_ROOT } from './repo-root';

const run = promisify(execFile);
export const BUILD_TIMEOUT_MS = 180_000;

/** The built apps' entry points. */
export const APP_MAINS = {
  api: join(REPO_ROOT, 'dist/apps/api/apps/api/src/main.js'),
  dialer: join(REPO_ROOT, 'dist/apps/dialer/apps/dialer/src/main.js'),
};

/**
 * Builds the api and the dialer exactly as `npm run build` does, once per test
 * run: the suites that run the built apps (CLI, `npm start`, chaos) take turns
 * on a lock, also across parallel workers, and the ones after the first find
 * the build done. A failed build fails the calling suite.
 */
export async function buildAppsOnce(): Promise<void> {
  // The run's directory, not the worker's: the workers build into the one dist/.
  const { artifactsDir } = baseRunResources();
  const done = join(artifactsDir, '.apps-built');
  const lock = join(artifactsDir, '.apps-building');
  await acquire(lock);
  try {
    if (existsSync(done)) return;
    // The two builds write to separate directories, so they can run side by side.
    const failed = (await Promise.allSettled(['api', 'dialer'].map(build))).find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
    writeFileSync(done, new Date().toISOString());
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

async function build(app: string): Promise<void> {
  try {
    await run(join(REPO_ROOT, 'node_modules/.bin/nest'), ['build', app], { cwd: REPO_ROOT, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`nest build ${app} failed:\n${stdout}${stderr}`, { cause: error });
  }
}

async function acquire(lock: string): Promise<void> {
  const deadline = Date.now() + BUILD_TIMEOUT_MS;
  for (;;) {
    try {
      mkdirSync(lock);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
