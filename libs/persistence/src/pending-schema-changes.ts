import { DataSource } from 'typeorm';

/** SQL that would bring the schema in line with the entities; empty when migrations are complete. */
export async function pendingSchemaChanges(dataSource: DataSource): Promise<string[]> {
  const sql = await dataSource.driver.createSchemaBuilder().log();
  return sql.upQueries.map((query) => query.query);
}
