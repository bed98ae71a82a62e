import { DataSource } from 'typeorm';
import { createMigratedDatabase, dropDatabase } from '../../../test/support/test-resource-lifecycle';
import { scratchDatabaseUrl } from '../../../test/support/test-run-id';
import { createDataSource } from './create-data-source';
import { MIGRATIONS } from './migrations';
import { BigintRunIds1764240000000 } from './migrations/1764240000000-bigint-run-ids';
import { pendingSchemaChanges } from './pending-schema-changes';
import { runMigrations } from './run-migrations';

const INT4_MAX = 2_147_483_647;

describe('BigintRunIds migration', () => {
  const url = scratchDatabaseUrl('int4ids');
  let dataSource: DataSource;

  beforeAll(async () => {
    await dropDatabase(url);
    // As a deployment of the previous release has it: migrated up to just before `BigintRunIds`.
    await createMigratedDatabase(url, MIGRATIONS.slice(0, MIGRATIONS.indexOf(BigintRunIds1764240000000)));
    dataSource = createDataSource({ url, poolSize: 2 });
    await dataSource.initialize();
  });
  afterAll(async () => {
    await dataSource?.destroy();
    await dropDatabase(url);
  });

  const idColumns = async () =>
    dataSource.query(
      `SELECT table_name, column_name, data_type FROM information_schema.columns
        WHERE (table_name, column_name) IN (('workflow_runs', 'id'), ('idempotency_keys', 'run_id'), ('sandbox_calls', 'run_id'))
        ORDER BY table_name`,
    );

  it("widens a previous release's run ids, keeping every run, key and ledger entry, and draws ids past int4", async () => {
    expect((await idColumns()).map((column: { data_type: string }) => column.data_type)).toEqual(['integer', 'integer', 'integer']);
    const runId = INT4_MAX - 1;
    await dataSource.query(
      `INSERT INTO workflow_runs (id, name, status, organization_id, workflow_id, environment, phone_number)
       VALUES ($1, $2, 'completed', 1, 1, 'production', '+14155550100')`,
      [runId, `WR-API-${runId}`],
    );
    await dataSource.query(
      `INSERT INTO idempotency_keys (organization_id, key, request_hash, run_id, locked_until, expires_at)
       VALUES (1, 'k', repeat('a', 64), $1, now(), now() + interval '1 day')`,
      [runId],
    );
    await dataSource.query(
      `INSERT INTO sandbox_calls (call_id, run_id, to_number, outcome, ring_ms, talk_ms) VALUES ('SB-1', $1, '+14155550100', 'answered', 0, 0)`,
      [runId],
    );
    await dataSource.query(`SELECT setval(pg_get_serial_sequence('workflow_runs', 'id'), $1)`, [INT4_MAX]);
    // The previous release's sequence stops here: every trigger from now on would fail.
    await expect(dataSource.query(`SELECT nextval(pg_get_serial_sequence('workflow_runs', 'id'))`)).rejects.toMatchObject({
      driverError: expect.objectContaining({ code: '2200H' }),
    });

    const applied = await runMigrations(dataSource);

    // This one first, then any later release's.
    expect(applied.map((migration) => migration.name)).toEqual(MIGRATIONS.slice(MIGRATIONS.indexOf(BigintRunIds1764240000000)).map((migration) => migration.name));
    expect(applied[0].name).toBe('BigintRunIds1764240000000');
    expect(await idColumns()).toEqual([
      { table_name: 'idempotency_keys', column_name: 'run_id', data_type: 'bigint' },
      { table_name: 'sandbox_calls', column_name: 'run_id', data_type: 'bigint' },
      { table_name: 'workflow_runs', column_name: 'id', data_type: 'bigint' },
    ]);
    expect(await dataSource.query(`SELECT nextval(pg_get_serial_sequence('workflow_runs', 'id')) AS id`)).toEqual([{ id: INT4_MAX + 1 }]);
    expect(await dataSource.query(`SELECT id, name FROM workflow_runs`)).toEqual([{ id: runId, name: `WR-API-${runId}` }]);
    expect(await dataSource.query(`SELECT run_id FROM idempotency_keys`)).toEqual([{ run_id: runId }]);
    expect(await dataSource.query(`SELECT run_id FROM sandbox_calls`)).toEqual([{ run_id: runId }]);
  });

  it('leaves the upgraded database as the entities describe it, the sequence stopping where numbers stop being exact', async () => {
    await runMigrations(dataSource);

    expect(await pendingSchemaChanges(dataSource)).toEqual([]);
    expect(
      await dataSource.query(`SELECT column_default FROM information_schema.columns WHERE table_name = 'workflow_runs' AND column_name = 'id'`),
    ).toEqual([{ column_default: "nextval('workflow_runs_id_seq'::regclass)" }]);
    expect(
      await dataSource.query(`SELECT data_type, maximum_value FROM information_schema.sequences WHERE sequence_name = 'workflow_runs_id_seq'`),
    ).toEqual([{ data_type: 'bigint', maximum_value: String(Number.MAX_SAFE_INTEGER) }]);
    await dataSource.query(`SELECT setval(pg_get_serial_sequence('workflow_runs', 'id'), $1)`, [Number.MAX_SAFE_INTEGER]);
    await expect(dataSource.query(`SELECT nextval(pg_get_serial_sequence('workflow_runs', 'id'))`)).rejects.toMatchObject({
      driverError: expect.objectContaining({ code: '2200H' }),
    });
  });
});
