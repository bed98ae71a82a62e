import { MigrationInterface, QueryRunner } from 'typeorm';

/** Organizations, keys, workflows with versioned definitions, triggers, carrier configurations and runs. */
export class InitialSchema1763776000000 implements MigrationInterface {
  name = 'InitialSchema1763776000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "organizations" ("id" SERIAL NOT NULL, "name" text NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_6b031fcd0863e3f6b44230163f9" PRIMARY KEY ("id"))`);

    await queryRunner.query(`CREATE TABLE "api_keys" ("id" SERIAL NOT NULL, "organization_id" integer NOT NULL, "name" text NOT NULL, "role" text NOT NULL, "key_hash" character(64) NOT NULL, "key_prefix" text NOT NULL, "workflow_ids" integer array, "revoked_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_5c8a79801b44bd27b79228e1dad" PRIMARY KEY ("id"))`);
    await queryRunner.query(`CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys" ("key_hash")`);
    await queryRunner.query(`CREATE INDEX "api_keys_organization_idx" ON "api_keys" ("organization_id")`);

    await queryRunner.query(`CREATE TABLE "workflows" ("id" SERIAL NOT NULL, "organization_id" integer NOT NULL, "name" text NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_5b5757cc1cd86268019fef52e0c" PRIMARY KEY ("id"))`);
    await queryRunner.query(`CREATE INDEX "workflows_organization_idx" ON "workflows" ("organization_id", "id")`);

    await queryRunner.query(`CREATE TABLE "workflow_definitions" ("id" SERIAL NOT NULL, "workflow_id" integer NOT NULL, "version" integer NOT NULL, "status" text NOT NULL, "definition" jsonb NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "published_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "PK_4f92fadfc5fb722f080ceaec272" PRIMARY KEY ("id"))`);
    await queryRunner.query(`CREATE UNIQUE INDEX "workflow_definitions_one_published" ON "workflow_definitions" ("workflow_id") WHERE status = 'published'`);
    await queryRunner.query(`CREATE UNIQUE INDEX "workflow_definitions_one_draft" ON "workflow_definitions" ("workflow_id") WHERE status = 'draft'`);
    await queryRunner.query(`CREATE UNIQUE INDEX "workflow_definitions_version_key" ON "workflow_definitions" ("workflow_id", "version")`);

    await queryRunner.query(`CREATE TABLE "api_triggers" ("uuid" uuid NOT NULL, "organization_id" integer NOT NULL, "workflow_id" integer NOT NULL, "is_active" boolean NOT NULL DEFAULT true, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_b190f99ab810a5b20a12a214972" PRIMARY KEY ("uuid"))`);
    await queryRunner.query(`CREATE INDEX "api_triggers_workflow_idx" ON "api_triggers" ("workflow_id")`);

    await queryRunner.query(`CREATE TABLE "telephony_configurations" ("id" SERIAL NOT NULL, "organization_id" integer NOT NULL, "name" text NOT NULL, "provider" text NOT NULL, "credentials_encrypted" text, "from_numbers" text array NOT NULL DEFAULT '{}', "is_default_outbound" boolean NOT NULL DEFAULT false, "calls_per_second" double precision NOT NULL DEFAULT '1', "max_concurrent_calls" integer NOT NULL DEFAULT '10', "max_call_duration_seconds" integer NOT NULL DEFAULT '3600', "settings" jsonb NOT NULL DEFAULT '{}', "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_aaef982e804853c0f4f7b39eca9" PRIMARY KEY ("id"))`);
    await queryRunner.query(`CREATE UNIQUE INDEX "telephony_configurations_one_default" ON "telephony_configurations" ("organization_id") WHERE is_default_outbound`);
    await queryRunner.query(`CREATE INDEX "telephony_configurations_organization_idx" ON "telephony_configurations" ("organization_id")`);

    await queryRunner.query(`CREATE TABLE "workflow_runs" ("id" SERIAL NOT NULL, "organization_id" integer NOT NULL, "workflow_id" integer NOT NULL, "name" text NOT NULL, "status" text NOT NULL, "environment" text NOT NULL, "call_type" text NOT NULL DEFAULT 'outbound', "trigger_uuid" uuid, "api_key_id" integer, "telephony_configuration_id" integer, "provider" text, "definition_id" integer, "phone_number" text NOT NULL, "from_number" text, "provider_call_id" text, "initial_context" jsonb NOT NULL DEFAULT '{}', "gathered_context" jsonb NOT NULL DEFAULT '{}', "logs" jsonb NOT NULL DEFAULT '{}', "annotations" jsonb NOT NULL DEFAULT '{}', "cost_info" jsonb NOT NULL DEFAULT '{}', "duration_seconds" double precision, "answered_at" TIMESTAMP WITH TIME ZONE, "ended_at" TIMESTAMP WITH TIME ZONE, "end_reason" text, "is_completed" boolean NOT NULL DEFAULT false, "transcript_key" text, "recording_key" text, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_eea9f8d0a660b3f48114c313233" PRIMARY KEY ("id"))`);
    await queryRunner.query(`CREATE INDEX "workflow_runs_open_idx" ON "workflow_runs" ("status", "updated_at") WHERE NOT is_completed`);
    await queryRunner.query(`CREATE INDEX "workflow_runs_workflow_status_idx" ON "workflow_runs" ("workflow_id", "status", "id")`);
    await queryRunner.query(`CREATE INDEX "workflow_runs_workflow_idx" ON "workflow_runs" ("workflow_id", "id")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of [
      'workflow_runs',
      'telephony_configurations',
      'api_triggers',
      'workflow_definitions',
      'workflows',
      'api_keys',
      'organizations',
    ]) {
      await queryRunner.query(`DROP TABLE "${table}"`);
    }
  }
}
