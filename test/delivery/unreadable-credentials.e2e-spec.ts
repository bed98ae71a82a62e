import { agentGraph, createOrganization, runsWhenComplete, sandboxDialsByRun, seedSandboxConfiguration, seedWorkflow } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';

describe('a configuration whose credentials cannot be read', () => {
  let apps: TestApps;

  beforeAll(async () => {
    apps = await startTestApps();
  });
  afterAll(() => apps.close());

  it('keeps its runs queued, and dials each once when the credentials can be read again', async () => {
    const org = await createOrganization(apps.dataSource);
    const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 20, talk_ms: 50 } });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
    // Sealed under another SECRETS_KEY, as after a key change that missed this row.
    await apps.dataSource.query(`UPDATE telephony_configurations SET credentials_encrypted = 'v1.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA.AAAA' WHERE id = $1`, [
      config.id,
    ]);
    const response = await apps.client.post(`/api/v1/public/agent/${workflow.triggerUuid}`, { phone_number: '+14155550100' }, { key: org.adminKey });
    expect(response.status).toBe(200);
    const runId: number = response.body.workflow_run_id;

    await new Promise((resolve) => setTimeout(resolve, 1500)); // the first try and its first retry
    const [stuck] = await apps.dataSource.query(`SELECT status FROM workflow_runs WHERE id = $1`, [runId]);
    expect(stuck.status).toBe('queued');
    expect((await sandboxDialsByRun(apps.dataSource, [runId])).get(runId)).toBe(0);

    await apps.dataSource.query(`UPDATE telephony_configurations SET credentials_encrypted = NULL WHERE id = $1`, [config.id]);
    const [run] = await runsWhenComplete(apps.dataSource, [runId], 30000);
    expect(run.status).toBe('completed');
    expect((await sandboxDialsByRun(apps.dataSource, [runId])).get(runId)).toBe(1);
  });
});
