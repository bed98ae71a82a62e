import { ChildProcessWithoutNullStreams, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../support/free-port';
import { deleteQueueKeys, dropDatabase } from '../support/test-resource-lifecycle';
import { scratchDatabaseUrl, testRunResources } from '../support/test-run-id';
import { waitFor } from '../support/wait-for';
import { BUILD_TIMEOUT_MS, buildAppsOnce } from '../support/build-apps-once';
import { REPO_ROOT } from '../support/repo-root';

const bash = promisify(execFile);

/** Runs printed shell lines exactly as a person pasting them would, in `cwd`. */
async function paste(lines: string[], cwd: string): Promise<string> {
  const { stdout } = await bash('bash', ['-euo', 'pipefail', '-c', lines.join('\n')], { cwd });
  return stdout;
}

describe('npm start (scripts/start-local.js)', () => {
  const databaseUrl = scratchDatabaseUrl('start');
  // Its own queues: a dialer on this run's shared prefix would also take jobs other test files left behind.
  const queuePrefix = testRunResources().queuePrefix.replace(/\}$/, '-start}');
  const workDir = mkdtempSync(join(tmpdir(), 'va-start-local-'));
  let child: ChildProcessWithoutNullStreams;
  let stdout = '';
  let stderr = '';
  let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  const appPids = () => [...stderr.matchAll(/(api|dialer) started \(pid (\d+)\)/g)].map((match) => Number(match[2]));
  const isRunning = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  beforeAll(async () => {
    await buildAppsOnce();
    await dropDatabase(databaseUrl);
    const { artifactsDir } = testRunResources();
    child = spawn(process.execPath, ['scripts/start-local.js'], {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
        PORT: String(await freePort()),
        DIALER_HEALTH_PORT: String(await freePort()),
        QUEUE_PREFIX: queuePrefix,
        ARTIFACTS_DIR: join(artifactsDir, 'start-local'),
        // Set, so the test does not write var/local-secrets.key into the checkout.
        SECRETS_KEY: '0563be26a0be3607089515f99dfd5e58865e2d40b800b7608e22940cad7a328e',
        // Info: the apps' own "stopped" lines (stdout, captured here) show that each drained before it exited.
        LOG_LEVEL: 'info',
      },
    });
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  }, BUILD_TIMEOUT_MS);

  afterAll(async () => {
    // Only what this test started, by pid, in case an assertion failed half-way.
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    for (const pid of appPids()) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
    rmSync(workDir, { recursive: true, force: true });
    await dropDatabase(databaseUrl);
    await deleteQueueKeys(queuePrefix);
  });

  it('seeds a demo whose printed curl commands place a call, read the run and download the recording; SIGHUP (a closed terminal) stops both apps as SIGTERM does', async () => {
    await waitFor(async () => (/Demo ready[\s\S]*# -{20,}\n/.test(stdout) ? true : undefined), {
      timeoutMs: 60_000,
      intervalMs: 200,
      what: 'start-local to print the demo commands',
    }).catch((error: Error) => {
      throw new Error(`${error.message}\nstart-local stderr:\n${stderr}`, { cause: error });
    });
    expect(appPids()).toHaveLength(2);
    // The apps run with the heap flags of scripts/app-node-flags.js: both the old generation's limit, the dialer a larger young one.
    const flagsOf = (app: string) => {
      const pid = Number(new RegExp(`${app} started \\(pid (\\d+)\\)`).exec(stderr)?.[1]);
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((arg) => arg.startsWith('--'));
    };
    expect(flagsOf('api')).toEqual(['--max-old-space-size=1024']);
    expect(flagsOf('dialer')).toEqual(['--max-old-space-size=1024', '--max-semi-space-size=32']);
    const commands = stdout.split('\n').filter((line) => /^(curl |RUN_ID=)/.test(line));
    const [trigger, runIdLine, readRun, download] = commands;
    expect(trigger).toMatch(/^curl -sS -X POST '.*\/api\/v1\/public\/agent\/[0-9a-f-]{36}' -H 'X-API-Key: vak_/);
    expect(runIdLine).toBe('RUN_ID=1');
    expect(readRun).toContain('/api/v1/workflow/');

    const initiated = JSON.parse(await paste([trigger], workDir));
    expect(initiated).toEqual({ status: 'initiated', workflow_run_id: 1, workflow_run_name: 'WR-API-1' });

    const run = await waitFor(
      async () => {
        const body = JSON.parse(await paste([runIdLine, readRun], workDir));
        return body.is_completed ? body : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500, what: 'the demo call to complete' },
    );
    expect(run).toMatchObject({
      status: 'completed',
      mode: 'sandbox',
      phone_number: '+14155550123',
      from_number: '+15005550006',
      initial_context: { customer: { name: 'Ada' } },
    });

    await paste([runIdLine, download], workDir);
    const wav = readFileSync(join(workDir, 'recording.wav'));
    expect(wav.subarray(0, 4).toString('ascii')).toBe('RIFF');
    expect(wav.subarray(8, 12).toString('ascii')).toBe('WAVE');
    const transcript = (await (await fetch(run.transcript_url)).json()) as { turns: unknown[] };
    expect(transcript.turns[0]).toMatchObject({ speaker: 'agent', text: expect.stringMatching(/^Hi Ada, /) });

    const pids = appPids();
    child.kill('SIGHUP');
    const exit = await exited;
    if (exit.code !== 0) throw new Error(`start-local ended with ${JSON.stringify(exit)} after SIGHUP; its stderr:\n${stderr}`);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(stderr).toMatch(/api stopped/);
    expect(stderr).toMatch(/dialer stopped/);
    // Each app got SIGTERM, which it drains on, not the SIGHUP that would have killed it where it stood.
    expect(stdout.match(/"msg":"shutting down"/g)).toHaveLength(2);
    expect(stdout.match(/"msg":"stopped"/g)).toHaveLength(2);
    for (const pid of pids) expect(isRunning(pid)).toBe(false);
  }, 90_000);
});

describe('npm start with a DATABASE_URL that is not a URL', () => {
  beforeAll(() => buildAppsOnce(), BUILD_TIMEOUT_MS);

  it('says which variable is wrong, as the apps check it, not a stack trace of its own', async () => {
    // A generated password with a '/' left unencoded.
    const child = spawn(process.execPath, ['scripts/start-local.js'], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: 'postgres://app:ab/cd@127.0.0.1:5432/voice_agent', SECRETS_KEY: '0563be26a0be3607089515f99dfd5e58865e2d40b800b7608e22940cad7a328e' },
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exit = await new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    expect(exit).not.toBe(0);
    expect(output).toContain('DATABASE_URL must be a URL');
    expect(output).not.toContain('Invalid URL');
  }, 30_000);
});
