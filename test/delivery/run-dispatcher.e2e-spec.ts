import { WorkflowRunStore } from '@app/persistence';
import { agentGraph, createOrganization, runsWhenComplete, sandboxDialsByRun, seedSandboxConfiguration, seedWorkflow } from '../support/fixtures';
import { createIsolatedResources, IsolatedResources } from '../support/isolated-resources';
import { storedRunIds } from '../support/stored-run-ids';
import { startTestApps, TestApps } from '../support/test-apps';

/** The safety net under the gateway's enqueue: a stored run without a dial job is found and dialed once. */
describe('run dispatcher', () => {
  let apps: TestApps;
  let own: IsolatedResources;

  beforeAll(async () => {
    // Its own database and queue: the dispatcher sweeps every queued run, and must find only this suite's.
    own = await createIsolatedResources('dispatcher');
    apps = await startTestApps({ env: { ...own.env, DISPATCH_INTERVAL_MS: '200' } });
  });
  afterAll(async () => {
    await apps.close();
    await own.drop();
  });

  it('dials, once each, runs stored while everything is up but never enqueued, a few seconds after they settle', async () => {
    const org = await createOrganization(apps.dataSource);
    const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 0, talk_ms: 0 } });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
    // Let the dispatcher's first (full) sweep pass, so these are found by the round that checks new runs.
    await new Promise((resolve) => setTimeout(resolve, 500));

    const store = apps.api.get(WorkflowRunStore);
    const [{ id: apiKeyId }]: Array<{ id: number }> = await apps.dataSource.query(
      `SELECT id FROM api_keys WHERE organization_id = $1 LIMIT 1`,
      [org.organizationId],
    );
    const stored = Date.now();
    const runIds = storedRunIds(
      await store.insertQueued(
      Array.from({ length: 5 }, (_, index) => ({
        organizationId: org.organizationId,
        workflowId: workflow.workflowId,
        environment: 'production' as const,
        triggerUuid: workflow.triggerUuid,
        apiKeyId,
        telephonyConfigurationId: config.id,
        provider: 'sandbox',
        phoneNumber: `+1415555020${index}`,
        initialContext: {},
      })),
      ),
    );
    const runs = await runsWhenComplete(apps.dataSource, runIds, 15_000);
    expect(runs.map((run) => run.status)).toEqual(runIds.map(() => 'completed'));
    // Settling takes 2 s; a full sweep would only come after 30 s.
    expect(Date.now() - stored).toBeLessThan(12_000);
    expect([...(await sandboxDialsByRun(apps.dataSource, runIds)).values()]).toEqual(runIds.map(() => 1));
  });
});
