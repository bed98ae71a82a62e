import { DataSource } from 'typeorm';
import { createMigratedDatabase, dropDatabase } from '../../../test/support/test-resource-lifecycle';
import { scratchDatabaseUrl } from '../../../test/support/test-run-id';
import { createDataSource } from './create-data-source';
import { MIGRATIONS } from './migrations';
import { DefinitionTriggerPaths1764600000000 } from './migrations/1764600000000-definition-trigger-paths';
import { pendingSchemaChanges } from './pending-schema-changes';
import { runMigrations } from './run-migrations';

const A = '0b1c7a3e-52a4-4a8e-9c61-2f4f6f3f0a01';
const B = '0b1c7a3e-52a4-4a8e-9c61-2f4f6f3f0a02';
const C = '0b1c7a3e-52a4-4a8e-9c61-2f4f6f3f0a03';

const graphWith = (...paths: string[]) =>
  JSON.stringify({
    nodes: [
      ...paths.map((path, index) => ({ id: `t${index}`, type: 'trigger', data: { trigger_path: path } })),
      { id: 'start', type: 'startCall', data: { prompt: 'Hello' } },
    ],
    edges: [],
  });

describe('DefinitionTriggerPaths migration', () => {
  const url = scratchDatabaseUrl('triggerpaths');
  let dataSource: DataSource;

  beforeAll(async () => {
    await dropDatabase(url);
    // As the previous release left it.
    await createMigratedDatabase(url, MIGRATIONS.slice(0, MIGRATIONS.indexOf(DefinitionTriggerPaths1764600000000)));
    dataSource = createDataSource({ url, poolSize: 2 });
    await dataSource.initialize();
  });
  afterAll(async () => {
    await dataSource?.destroy();
    await dropDatabase(url);
  });

  const pathsOf = async (id: number): Promise<string[]> =>
    (await dataSource.query(`SELECT trigger_paths FROM workflow_definitions WHERE id = $1`, [id]))[0].trigger_paths;
  const insert = async (status: string, version: number, graph: string): Promise<number> =>
    (
      await dataSource.query(`INSERT INTO workflow_definitions (workflow_id, version, status, definition) VALUES (1, $1, $2, $3::jsonb) RETURNING id`, [
        version,
        status,
        graph,
      ])
    )[0].id;

  it('fills in the current definitions, then keeps every graph written its paths, however it is written', async () => {
    const archived = await insert('archived', 1, graphWith(A));
    const published = await insert('published', 2, graphWith(A, B));
    const draft = await insert('draft', 3, graphWith(C));
    await runMigrations(dataSource);
    expect(await pendingSchemaChanges(dataSource)).toEqual([]);

    expect(await pathsOf(published)).toEqual([A, B]);
    expect(await pathsOf(draft)).toEqual([C]);
    // Never listed: left as the default.
    expect(await pathsOf(archived)).toEqual([]);

    // Written since: on insert, and on a change of the graph (a value written for the column itself is not kept).
    const next = await insert('archived', 4, graphWith(B, C));
    expect(await pathsOf(next)).toEqual([B, C]);
    await dataSource.query(`UPDATE workflow_definitions SET definition = $2::jsonb, trigger_paths = '["made up"]' WHERE id = $1`, [next, graphWith()]);
    expect(await pathsOf(next)).toEqual([]);
  });
});
