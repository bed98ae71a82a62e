import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The longest a run's call may last, as its dial told the carrier. The
 * configuration's value can change while calls are live (an operator lowers
 * it), and the reaper must judge each call by the limit it was placed with:
 * by the new one it would end a live, shorter-limited conversation `failed`
 * and free its slot while the carrier lets it go on. Null on runs dialed
 * before this column, which fall back to their configuration's value.
 * A nullable column without a default: added without rewriting the table.
 */
export class DialedCallLimit1764400000000 implements MigrationInterface {
  name = 'DialedCallLimit1764400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflow_runs" ADD "max_call_duration_seconds" integer`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflow_runs" DROP COLUMN "max_call_duration_seconds"`);
  }
}
