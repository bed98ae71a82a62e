import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Run ids as `bigint`. Every trigger sent to Postgres draws an id, stored or
 * not, so a `SERIAL` (int4) column runs out after 2,147,483,647 of them:
 * about 25 days at a sustained 1,000 triggers a second, after which every
 * trigger fails. The sequence is widened with the columns (a `SERIAL`'s
 * sequence is `AS integer`, and stops at int4's maximum whatever its column).
 * The apps read run ids as JavaScript numbers, exact up to 2^53 − 1, so the
 * sequence stops there: past it a trigger fails instead of storing a run
 * whose id would read as another's (285 years at a million runs a second).
 *
 * Changing a column's type rewrites its table under an exclusive lock (19 s
 * for a million runs and their sandbox ledger on a 2-core machine): let live
 * calls end, stop the API and the dialers, migrate, and start the new
 * release (README, "Postgres in production").
 */
export class BigintRunIds1764240000000 implements MigrationInterface {
  name = 'BigintRunIds1764240000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflow_runs" ALTER COLUMN "id" TYPE bigint`);
    await queryRunner.query(`ALTER SEQUENCE "workflow_runs_id_seq" AS bigint MAXVALUE 9007199254740991`);
    await queryRunner.query(`ALTER TABLE "idempotency_keys" ALTER COLUMN "run_id" TYPE bigint`);
    await queryRunner.query(`ALTER TABLE "sandbox_calls" ALTER COLUMN "run_id" TYPE bigint`);
    // A column's new type drops its planner statistics.
    await queryRunner.query(`ANALYZE "workflow_runs", "idempotency_keys", "sandbox_calls"`);
  }

  /** Fails once a run id past int4's range was drawn (stored or not): such ids cannot go back. */
  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "sandbox_calls" ALTER COLUMN "run_id" TYPE integer`);
    await queryRunner.query(`ALTER TABLE "idempotency_keys" ALTER COLUMN "run_id" TYPE integer`);
    await queryRunner.query(`ALTER SEQUENCE "workflow_runs_id_seq" AS integer MAXVALUE 2147483647`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" ALTER COLUMN "id" TYPE integer`);
  }
}
