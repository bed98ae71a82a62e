import { MigrationInterface, QueryRunner } from 'typeorm';

/** The trigger paths of a definition's graph, as a JSON array of strings. */
const TRIGGER_PATHS = `jsonb_path_query_array(definition, '$.nodes[*] ? (@.type == "trigger").data.trigger_path')`;

/**
 * The trigger paths each definition's graph holds, kept beside the graph by
 * Postgres itself (a trigger on every insert, and on every change of the
 * graph), however the row is written: a workflow's view lists the triggers
 * of its current definitions, and the list of workflows, which reads no
 * graph (each up to 256 KiB), reads them here instead of unpacking every
 * graph on the page. The column is added with a constant default (no table
 * rewrite); only the current definitions are filled in, archived ones are
 * never listed.
 */
export class DefinitionTriggerPaths1764600000000 implements MigrationInterface {
  name = 'DefinitionTriggerPaths1764600000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "workflow_definitions" ADD "trigger_paths" jsonb NOT NULL DEFAULT '[]'`);
    await queryRunner.query(
      `CREATE FUNCTION workflow_definition_trigger_paths() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         NEW.trigger_paths := ${TRIGGER_PATHS.replace('definition', 'NEW.definition')};
         RETURN NEW;
       END
       $$`,
    );
    await queryRunner.query(
      `CREATE TRIGGER workflow_definitions_trigger_paths BEFORE INSERT OR UPDATE OF definition ON workflow_definitions
       FOR EACH ROW EXECUTE FUNCTION workflow_definition_trigger_paths()`,
    );
    await queryRunner.query(`UPDATE workflow_definitions SET trigger_paths = ${TRIGGER_PATHS} WHERE status IN ('draft', 'published')`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER workflow_definitions_trigger_paths ON workflow_definitions`);
    await queryRunner.query(`DROP FUNCTION workflow_definition_trigger_paths()`);
    await queryRunner.query(`ALTER TABLE "workflow_definitions" DROP COLUMN "trigger_paths"`);
  }
}
