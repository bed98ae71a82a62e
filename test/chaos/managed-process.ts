import { ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

/** Where every process's whole output is appended (`<name>.log`), when set: CHAOS_LOG_DIR. */
const LOG_DIR = process.env.CHAOS_LOG_DIR;

/**
 * A child process the chaos run starts, kills and restarts; the end of its
 * output is kept for the report, and all of it in CHAOS_LOG_DIR when set.
 */
export class ManagedProcess {
  private child: ChildProcess | null = null;
  /** When the current process was started (epoch ms). */
  startedAt = 0;
  private output: string[] = [];

  constructor(
    readonly name: string,
    private readonly command: string,
    private readonly args: string[],
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  start(): void {
    const child = spawn(this.command, this.args, { env: this.env, stdio: ['ignore', 'pipe', 'pipe'] });
    if (LOG_DIR) mkdirSync(LOG_DIR, { recursive: true });
    const keep = (chunk: Buffer) => {
      if (LOG_DIR) appendFileSync(join(LOG_DIR, `${this.name}.log`), chunk);
      this.output.push(chunk.toString('utf8'));
      if (this.output.length > 400) this.output.splice(0, this.output.length - 400);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.child = child;
    this.startedAt = Date.now();
  }

  /** Sends `signal` and waits for the process to exit (SIGKILL after `timeoutMs`). */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15000): Promise<number | null> {
    const child = this.child;
    if (!child || !this.running) return child?.exitCode ?? null;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const code = await exited;
    clearTimeout(timer);
    return code;
  }

  tail(lines = 30): string {
    return this.output.join('').split('\n').slice(-lines).join('\n');
  }
}
