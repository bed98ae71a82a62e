import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * When the gateway admitted an agent runtime's recording upload, on its
 * head, while the session was open. The dialer finishing the call waits for
 * such an upload while its body may still be arriving, and a session it
 * closes meanwhile does not refuse the upload: otherwise the recording of a
 * runtime that uploads slowly was read whole, then refused with 410 and
 * lost. A nullable column without a default: added without rewriting the table.
 */
export class RecordingUploadAdmission1764500000000 implements MigrationInterface {
  name = 'RecordingUploadAdmission1764500000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflow_runs" ADD "recording_upload_admitted_at" TIMESTAMP WITH TIME ZONE`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflow_runs" DROP COLUMN "recording_upload_admitted_at"`);
  }
}
