import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource, Migration, MigrationExecutor, QueryRunner } from 'typeorm';
// Relative, not '@app/common': the tests' global setup runs migrations where the path aliases are not mapped.
import { doublingDelay } from '../../common/src/doubling-delay';
import { withoutReadTimeout } from './answering-client';

/** Any constant works; every process that migrates must use the same one. */
const MIGRATION_LOCK_ID = 727_011_001;
/** Postgres' SQLSTATE for a lock wait that ran past `lock_timeout`. */
const LOCK_NOT_AVAILABLE = '55P03';

export interface MigrationOptions {
  /**
   * How long a migration statement may wait for a table's lock (5 s). While
   * DDL waits for its lock, every later query on that table queues behind
   * it, so a migration stuck behind a long transaction would stall the
   * service: past this the attempt is rolled back and tried again.
   */
  lockTimeoutMs?: number;
  /** Attempts in all before the lock's error is thrown (10). */
  attempts?: number;
  /** The wait before attempt `attempt + 1` (2 s, doubling, at most 30 s). */
  retryDelayMs?: (attempt: number) => number;
  /** Told of each attempt that could not get its lock, before the wait. */
  onRetry?: (retry: { attempt: number; attempts: number; delayMs: number; message: string }) => void;
}

/**
 * Applies pending migrations in one transaction while holding a Postgres
 * advisory lock, so replicas that boot together never race on the schema:
 * the others wait for the lock as long as the first one migrates, then find
 * nothing to do. Lock, wait and migrations share one connection, on which
 * the pool's statement timeout (meant for requests) is lifted: it would
 * cancel the wait of a replica behind a long migration, and any migration
 * statement that runs past it. Table locks, though, are waited for at most
 * `lockTimeoutMs` (see `MigrationOptions`): the whole transaction is then
 * rolled back, so nothing is half applied, and tried again after a pause.
 */
export async function runMigrations(dataSource: DataSource, options: MigrationOptions = {}): Promise<Migration[]> {
  const runner = dataSource.createQueryRunner();
  // The connection's own read timeout goes too, for the same reasons (`AnsweringClient`).
  const connection: unknown = await runner.connect();
  return withoutReadTimeout(connection, () => migrateHoldingLock(dataSource, runner, options));
}

async function migrateHoldingLock(dataSource: DataSource, runner: QueryRunner, options: MigrationOptions): Promise<Migration[]> {
  const lockTimeoutMs = options.lockTimeoutMs ?? 5_000;
  const attempts = options.attempts ?? 10;
  const retryDelayMs = options.retryDelayMs ?? ((attempt: number) => doublingDelay(2_000, attempt, 30_000));
  try {
    await runner.query('SET statement_timeout = 0');
    // The advisory lock's own wait is not bounded: another replica's migration may rightly take long.
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    await runner.query(`SELECT set_config('lock_timeout', $1, false)`, [`${lockTimeoutMs}ms`]);
    const executor = new MigrationExecutor(dataSource, runner);
    executor.transaction = 'all';
    for (let attempt = 1; ; attempt++) {
      try {
        return await executor.executePendingMigrations();
      } catch (error) {
        if (!isLockTimeout(error) || attempt >= attempts) throw error;
        const delayMs = retryDelayMs(attempt);
        options.onRetry?.({ attempt, attempts, delayMs, message: (error as Error).message });
        await sleep(delayMs);
      }
    }
  } finally {
    await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => undefined);
    // Back to the pool with the pool's timeouts.
    await runner.query('RESET statement_timeout').catch(() => undefined);
    await runner.query('RESET lock_timeout').catch(() => undefined);
    await runner.release();
  }
}

/**
 * Whether a migration failed waiting for a table lock. (Without `@app/common`:
 * the test suite's global setup migrates through this file, outside Jest's
 * module mapping.)
 */
function isLockTimeout(error: unknown): boolean {
  const failed = error as { code?: unknown; driverError?: { code?: unknown } } | null;
  return (failed?.driverError?.code ?? failed?.code) === LOCK_NOT_AVAILABLE;
}
