import { Client } from 'pg';
import type { Socket } from 'node:net';

/**
 * The pool's connection, which gives up on a Postgres that stopped
 * answering. `statement_timeout` is Postgres' own: it cancels a slow
 * statement, but a connection whose packets are dropped (a failover, a
 * partition that resets nothing) gets no answer at all, and the driver
 * waits for the kernel to give up on the socket, a quarter of an hour on
 * Linux. Every request on that connection waits as long. A statement
 * without any answer past `readTimeoutMs` ends the connection instead: its
 * statements fail as for a lost connection (503 for a request), and the
 * pool, told by the error, replaces it.
 *
 * A timer per statement, cleared by its answer. 0 lifts it (migrations,
 * whose statements and lock waits may rightly take long: `withoutReadTimeout`).
 */
export class AnsweringClient extends Client {
  readTimeoutMs = 0;

  // pg's `query` has a dozen overloads; this one forwards whichever was called.
  override query(...args: unknown[]): never {
    const forward = super.query as (...forwarded: unknown[]) => never;
    const timeoutMs = this.readTimeoutMs;
    const submittable = typeof (args[0] as { submit?: unknown } | null)?.submit === 'function';
    if (timeoutMs <= 0 || submittable) return forward.apply(this, args);
    const timer = setTimeout(() => this.giveUp(timeoutMs), timeoutMs);
    const answered = () => clearTimeout(timer);
    const last = args.length - 1;
    const callback = args[last];
    if (typeof callback === 'function') {
      args[last] = (error: unknown, result: unknown) => {
        answered();
        callback(error, result);
      };
      return forward.apply(this, args);
    }
    const result = forward.apply(this, args) as Promise<unknown>;
    // Its own branch, which takes the failure too: the caller still gets it from `result`.
    result.then(answered, answered);
    return result as never;
  }

  private giveUp(timeoutMs: number): void {
    const error = Object.assign(new Error(`Connection terminated: Postgres gave no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' });
    (this as unknown as { connection: { stream: Socket } }).connection.stream.destroy(error);
  }
}

/**
 * Runs `work` on a pool connection with its read timeout lifted, and puts
 * the timeout back after. `connection` is what TypeORM's query runner
 * `connect()` answers: the pool's client.
 */
export async function withoutReadTimeout<T>(connection: unknown, work: () => Promise<T>): Promise<T> {
  if (!(connection instanceof AnsweringClient)) return work();
  const timeoutMs = connection.readTimeoutMs;
  connection.readTimeoutMs = 0;
  try {
    return await work();
  } finally {
    connection.readTimeoutMs = timeoutMs;
  }
}
