import { ChildProcessByStdio, spawn } from 'node:child_process';
import { Readable } from 'node:stream';
import { freePort } from '../../support/free-port';
import { APP_MAINS } from '../../support/build-apps-once';
import { REPO_ROOT } from '../../support/repo-root';

export interface SpawnedApp {
  child: ChildProcessByStdio<null, Readable, Readable>;
  /** Its stdout and stderr so far, as they arrived. */
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts a built app as production runs it, on this test's own database,
 * queue prefix and artifacts directory, with free ports unless `env` says
 * otherwise; its output is collected.
 */
export async function spawnApp(
  app: keyof typeof APP_MAINS,
  own: { databaseUrl: string; queuePrefix: string; artifactsDir: string },
  options: { nodeArgs?: string[]; env?: Record<string, string> } = {},
): Promise<SpawnedApp> {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), APP_MAINS[app]], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      NODE_ENV: 'production',
      DATABASE_URL: own.databaseUrl,
      REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      QUEUE_PREFIX: own.queuePrefix,
      SECRETS_KEY: '6aa8c9c4340207655e94d1127cc31864777517d89c302cdd15f01c6c496662df',
      ARTIFACTS_DIR: own.artifactsDir,
      PORT: String(await freePort()),
      DIALER_HEALTH_PORT: String(await freePort()),
      LOG_LEVEL: 'info',
      ...options.env,
    },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, output: () => output, exited };
}
