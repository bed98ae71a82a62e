import { AbstractLogger } from 'typeorm';

/**
 * TypeORM's logger with nothing written. `logging: false` alone still lets
 * it print a failed migration (and slow queries) to stdout, where the CLI
 * writes its answer (`migrate --json`): `runMigrations` reports a failure
 * itself, and the apps log their own errors without the bound values TypeORM
 * would print.
 */
export class SilentTypeormLogger extends AbstractLogger {
  protected writeLog(): void {
    // Nothing: see the class comment.
  }
}
