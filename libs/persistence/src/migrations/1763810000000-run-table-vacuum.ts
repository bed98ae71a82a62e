import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every call updates its run five or six times (claim, dial, ring, answer,
 * end, artifacts), so `workflow_runs` gathers dead row versions several times
 * faster than rows. Postgres' defaults wait for 20 % of a table to change
 * before vacuuming it, which on a table of millions of runs means millions of
 * dead versions in the way of every scan; 2 % keeps it lean.
 */
export class RunTableVacuum1763810000000 implements MigrationInterface {
  name = 'RunTableVacuum1763810000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "workflow_runs" SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflow_runs" RESET (autovacuum_vacuum_scale_factor, autovacuum_analyze_scale_factor)`);
  }
}
