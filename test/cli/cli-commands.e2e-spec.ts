import { DataSource } from 'typeorm';
import { ApiTrigger, createDataSource, Organization, TelephonyConfiguration, WorkflowDefinition } from '@app/persistence';
import { MIGRATIONS } from '@app/persistence/migrations';
import { startTestApps, TestApps } from '../support/test-apps';
import { dropDatabase } from '../support/test-resource-lifecycle';
import { scratchDatabaseUrl, testRunResources } from '../support/test-run-id';
import { BUILD_TIMEOUT_MS, buildAppsOnce } from '../support/build-apps-once';
import { cliEnv, runCli, runCommand } from './support/run-command';

const MIGRATION_NAMES = MIGRATIONS.map((migration) => new migration().name);

describe('the operator CLI', () => {
  beforeAll(() => buildAppsOnce(), BUILD_TIMEOUT_MS);

  describe('on a database that does not exist yet', () => {
    const databaseUrl = scratchDatabaseUrl('cli');
    let dataSource: DataSource;

    beforeAll(() => dropDatabase(databaseUrl));
    afterAll(async () => {
      await dataSource?.destroy();
      await dropDatabase(databaseUrl);
    });

    it('migrate creates the database and applies every migration; a second run applies none', async () => {
      const first = await runCli(['migrate', '--json'], databaseUrl);
      expect(first.code).toBe(0);
      expect(JSON.parse(first.stdout)).toEqual({ applied: MIGRATION_NAMES });
      expect(first.stderr).toContain('Created database');

      const second = await runCli(['migrate'], databaseUrl);
      expect(second.code).toBe(0);
      expect(second.stdout).toMatch(/^No pending migrations/);

      dataSource = createDataSource({ url: databaseUrl, poolSize: 1 });
      await dataSource.initialize();
      const recorded = await dataSource.query('SELECT name FROM schema_migrations ORDER BY id');
      expect(recorded.map((row: { name: string }) => row.name)).toEqual(MIGRATION_NAMES);
    });

    it('seed-demo seeds the demo organization, sandbox carrier and published agent once', async () => {
      const first = await runCli(['seed-demo'], databaseUrl);
      expect(first.code).toBe(0);
      const seed = JSON.parse(first.stdout);
      expect(seed).toEqual({
        seeded: true,
        organization_id: expect.any(Number),
        api_key: expect.stringMatching(/^vak_/),
        workflow_id: expect.any(Number),
        trigger_uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
        telephony_configuration_id: expect.any(Number),
      });

      const configuration = await dataSource.getRepository(TelephonyConfiguration).findOneByOrFail({ id: seed.telephony_configuration_id });
      expect(configuration).toMatchObject({
        organizationId: seed.organization_id,
        provider: 'sandbox',
        isDefaultOutbound: true,
        fromNumbers: ['+15005550006'],
        settings: { ring_ms: 1000, talk_ms: 4000 },
      });
      const definitions = await dataSource.getRepository(WorkflowDefinition).findBy({ workflowId: seed.workflow_id });
      expect(definitions).toHaveLength(1);
      expect(definitions[0].status).toBe('published');
      const nodes = definitions[0].definition.nodes;
      expect(nodes.map((node) => node.type).sort()).toEqual(['agentNode', 'endCall', 'startCall', 'trigger']);
      expect(nodes.find((node) => node.type === 'trigger')?.data.trigger_path).toBe(seed.trigger_uuid);
      expect(nodes.find((node) => node.type === 'startCall')?.data.greeting).toContain(
        '{{ initial_context.customer.name | default: "there" }}',
      );
      expect(await dataSource.getRepository(ApiTrigger).findOneBy({ uuid: seed.trigger_uuid })).toMatchObject({
        workflowId: seed.workflow_id,
        organizationId: seed.organization_id,
        isActive: true,
      });

      const again = await runCli(['seed-demo'], databaseUrl);
      expect(again.code).toBe(0);
      expect(JSON.parse(again.stdout)).toEqual({ seeded: false });
      expect(await dataSource.getRepository(Organization).count()).toBe(1);
    });
  });

  describe('bootstrap', () => {
    let apps: TestApps;

    beforeAll(async () => {
      apps = await startTestApps({ dialer: false });
    });
    afterAll(() => apps.close());

    it('prints only {"organization_id", "api_key"} on stdout, and the key is an admin key of a new organization', async () => {
      // Exactly the documented command, through npm.
      const result = await runCommand(
        'npm',
        ['run', '--silent', 'cli', '--', 'bootstrap', '--org', 'Acme "CLI" Ltd', '--json'],
        cliEnv(testRunResources().databaseUrl),
      );
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^\{"organization_id": \d+, "api_key": "vak_[A-Za-z0-9_-]+"\}\n$/);
      const created = JSON.parse(result.stdout);

      const organization = await apps.dataSource.getRepository(Organization).findOneByOrFail({ id: created.organization_id });
      expect(organization.name).toBe('Acme "CLI" Ltd');
      const authenticated = await apps.client.get('/api/v1/workflow/1/runs/1', { key: created.api_key });
      expect(authenticated.status).toBe(404);
      expect(authenticated.body.code).toBe('run_not_found');
      const unknownKey = await apps.client.get('/api/v1/workflow/1/runs/1', { key: `${created.api_key}x` });
      expect(unknownKey.status).toBe(401);
    });

    it('prints a sentence with the key without --json', async () => {
      const result = await runCli(['bootstrap', '--org=Sentence org'], testRunResources().databaseUrl);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/^Created organization "Sentence org" \(id \d+\).*\nvak_[A-Za-z0-9_-]+\n$/);
    });

    it('exits 2 with the usage when --org is missing, and creates nothing', async () => {
      const before = await apps.dataSource.getRepository(Organization).count();
      const result = await runCli(['bootstrap', '--json'], testRunResources().databaseUrl);
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain('--org <name> is required');
      expect(await apps.dataSource.getRepository(Organization).count()).toBe(before);
    });
  });

  it('exits 2 with the usage for an unknown command', async () => {
    const result = await runCli(['frobnicate'], testRunResources().databaseUrl);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('Unknown command "frobnicate"');
    expect(result.stderr).toContain('bootstrap --org <name> [--json]');
  });

  it('exits 1 naming DATABASE_URL when it is malformed or Postgres does not answer', async () => {
    const malformed = await runCli(['migrate'], 'mysql://127.0.0.1/db');
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toContain('DATABASE_URL must use postgres: or postgresql:');

    const unreachable = await runCli(['bootstrap', '--org', 'x'], 'postgres://postgres@127.0.0.1:1/nothing');
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain('cannot reach Postgres at 127.0.0.1:1/nothing (DATABASE_URL)');
  });
});
