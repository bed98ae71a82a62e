import { MigrationInterface, QueryRunner } from 'typeorm';

/** Idempotency keys, the sandbox carrier's call ledger, and when a run's status last moved (for the reaper). */
export class DeliveryGuarantees1763790000000 implements MigrationInterface {
  name = 'DeliveryGuarantees1763790000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "idempotency_keys" ("organization_id" integer NOT NULL, "key" text NOT NULL, "request_hash" character(64) NOT NULL, "run_id" integer, "locked_until" TIMESTAMP WITH TIME ZONE NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "PK_fa1b697098c138245abc15cad73" PRIMARY KEY ("organization_id", "key"))`);
    await queryRunner.query(`CREATE INDEX "idempotency_keys_expires_idx" ON "idempotency_keys" ("expires_at")`);

    await queryRunner.query(`CREATE TABLE "sandbox_calls" ("call_id" text NOT NULL, "run_id" integer NOT NULL, "to_number" text NOT NULL, "outcome" text NOT NULL, "ring_ms" integer NOT NULL, "talk_ms" integer NOT NULL, "canceled_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_a0fa081de4614a96ce361c51bbe" PRIMARY KEY ("call_id"))`);
    await queryRunner.query(`CREATE INDEX "sandbox_calls_run_idx" ON "sandbox_calls" ("run_id")`);

    await queryRunner.query(`ALTER TABLE "workflow_runs" ADD "status_changed_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now()`);
    await queryRunner.query(`UPDATE "workflow_runs" SET "status_changed_at" = "updated_at"`);
    await queryRunner.query(`DROP INDEX "public"."workflow_runs_open_idx"`);
    await queryRunner.query(`CREATE INDEX "workflow_runs_open_idx" ON "workflow_runs" ("status", "status_changed_at") WHERE NOT is_completed`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."workflow_runs_open_idx"`);
    await queryRunner.query(`CREATE INDEX "workflow_runs_open_idx" ON "workflow_runs" ("status", "updated_at") WHERE NOT is_completed`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" DROP COLUMN "status_changed_at"`);
    await queryRunner.query(`DROP TABLE "sandbox_calls"`);
    await queryRunner.query(`DROP TABLE "idempotency_keys"`);
  }
}
