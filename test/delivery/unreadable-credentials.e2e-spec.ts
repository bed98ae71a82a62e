import { agentGraph, createOrganization, runsWhenComplete, sandboxDialsByRun, seedSandboxConfiguration, seedWorkflow } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

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
  describe('through the API', () => {
    /** Sealed under another SECRETS_KEY, as after a key change that missed this row. */
    const SEALED_ELSEWHERE = 'v1.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA.AAAA';
    const expectUnreadable = (response: { status: number; body: any; headers: Headers }) => {
      expect(response.status).toBe(503);
      expect(response.body).toMatchObject({ code: 'credentials_unreadable', message: expect.stringContaining('SECRETS_KEY') });
      // Waiting does not mend it: no Retry-After, which would have clients repeat it every second.
      expect(response.headers.get('retry-after')).toBeNull();
    };

    it('answers 503 credentials_unreadable to a check or a change that needs them, and takes new ones', async () => {
      const org = await createOrganization(apps.dataSource);
      const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId);
      await apps.dataSource.query(`UPDATE telephony_configurations SET credentials_encrypted = $2 WHERE id = $1`, [config.id, SEALED_ELSEWHERE]);
      const path = `/api/v1/telephony-configurations/${config.id}`;

      expectUnreadable(await apps.client.post(`${path}/verify`, undefined, { key: org.adminKey }));
      expectUnreadable(await apps.client.patch(path, { settings: { ring_ms: 10 } }, { key: org.adminKey }));
      expect((await apps.client.patch(path, { name: 'Renamed' }, { key: org.adminKey })).status).toBe(200);

      expect((await apps.client.patch(path, { credentials: null, settings: { ring_ms: 10 } }, { key: org.adminKey })).status).toBe(200);
      expect((await apps.client.post(`${path}/verify`, undefined, { key: org.adminKey })).status).toBe(200);
    });

    it('answers 503 credentials_unreadable to the cancel of a ringing call, and leaves the run as it was', async () => {
      const org = await createOrganization(apps.dataSource);
      const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 60000, talk_ms: 50 } });
      const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
      const response = await apps.client.post(`/api/v1/public/agent/${workflow.triggerUuid}`, { phone_number: '+14155550100' }, { key: org.adminKey });
      const runId: number = response.body.workflow_run_id;
      await waitFor(async () => {
        const [run] = await apps.dataSource.query(`SELECT status, provider_call_id FROM workflow_runs WHERE id = $1`, [runId]);
        return run.status === 'ringing' && run.provider_call_id !== null ? run : undefined;
      });
      await apps.dataSource.query(`UPDATE telephony_configurations SET credentials_encrypted = $2 WHERE id = $1`, [config.id, SEALED_ELSEWHERE]);

      expectUnreadable(await apps.client.post(`/api/v1/workflow/${workflow.workflowId}/runs/${runId}/cancel`, undefined, { key: org.adminKey }));
      const [run] = await apps.dataSource.query(`SELECT status FROM workflow_runs WHERE id = $1`, [runId]);
      expect(run.status).toBe('ringing');
    });
  });
});
