import { spawn } from 'node:child_process';
import { REPO_ROOT } from '../../support/repo-root';

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command in the checkout to completion and collects both streams. */
export function runCommand(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** `node scripts/cli.js <args>` with the given DATABASE_URL and no SECRETS_KEY (the CLI must not need one). */
export function runCli(args: string[], databaseUrl: string): Promise<CommandResult> {
  return runCommand(process.execPath, ['scripts/cli.js', ...args], cliEnv(databaseUrl));
}

export function cliEnv(databaseUrl: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: databaseUrl };
  delete env.SECRETS_KEY;
  return env;
}
