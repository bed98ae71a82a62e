import { MigrationInterface, QueryRunner } from 'typeorm';

/** What the voice-agent runtime reports (transcript turns, session end) and the carrier's recording location. */
export class AgentSessions1763800000000 implements MigrationInterface {
  name = 'AgentSessions1763800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflow_runs" ADD "agent_transcript" jsonb NOT NULL DEFAULT '[]'`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" ADD "agent_session_started_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" ADD "agent_session_ended_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" ADD "carrier_recording_url" text`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflow_runs" DROP COLUMN "carrier_recording_url"`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" DROP COLUMN "agent_session_ended_at"`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" DROP COLUMN "agent_session_started_at"`);
    await queryRunner.query(`ALTER TABLE "workflow_runs" DROP COLUMN "agent_transcript"`);
  }
}
