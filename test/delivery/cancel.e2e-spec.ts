import { agentGraph, createOrganization, sandboxDialsByRun, seedSandboxConfiguration, seedWorkflow, TestOrganization } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

describe('POST /api/v1/workflow/{workflow_id}/runs/{run_id}/cancel', () => {
  let apps: TestApps;
  let org: TestOrganization;

  beforeAll(async () => {
    apps = await startTestApps();
    org = await createOrganization(apps.dataSource);
  });
  afterAll(() => apps.close());

  async function agent(settings: Record<string, unknown>, callsPerSecond = 100) {
    const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId, {
      settings,
      callsPerSecond,
      isDefaultOutbound: false,
    });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (id) => agentGraph(id) });
    const trigger = async () =>
      (
        await apps.client.post(
          `/api/v1/public/agent/${workflow.triggerUuid}`,
          { phone_number: '+14155550100', telephony_configuration_id: config.id },
          { key: org.adminKey },
        )
      ).body.workflow_run_id as number;
    const runPath = (runId: number) => `/api/v1/workflow/${workflow.workflowId}/runs/${runId}`;
    return { trigger, runPath };
  }

  it('cancels a run still waiting for its pacing slot, and it is never dialed', async () => {
    // At 0.5 calls per second the second run waits about 2 s for its slot.
    const { trigger, runPath } = await agent({ ring_ms: 10, talk_ms: 10 }, 0.5);
    await trigger();
    const waiting = await trigger();
    const response = await apps.client.post(`${runPath(waiting)}/cancel`, undefined, { key: org.adminKey });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status: 'canceled', end_reason: 'canceled', is_completed: true });
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect((await sandboxDialsByRun(apps.dataSource, [waiting])).get(waiting)).toBe(0);
    expect((await apps.client.get(runPath(waiting), { key: org.adminKey })).body.status).toBe('canceled');
  });

  it('hangs up a ringing call through the carrier and ends the run canceled', async () => {
    const { trigger, runPath } = await agent({ ring_ms: 4000, talk_ms: 100 });
    const runId = await trigger();
    await waitFor(async () => ((await apps.client.get(runPath(runId), { key: org.adminKey })).body.status === 'ringing' ? true : undefined));
    const response = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey });
    expect(response.status).toBe(202);
    const run = await waitFor(async () => {
      const current = (await apps.client.get(runPath(runId), { key: org.adminKey })).body;
      return current.is_completed ? current : undefined;
    });
    expect(run).toMatchObject({ status: 'canceled', answered_at: null });
  });

  it('answers 409 for a call that was already answered or finished', async () => {
    const { trigger, runPath } = await agent({ ring_ms: 10, talk_ms: 10 });
    const runId = await trigger();
    await waitFor(async () => ((await apps.client.get(runPath(runId), { key: org.adminKey })).body.is_completed ? true : undefined));
    const response = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey });
    expect(response.status).toBe(409);
    expect(response.body.code).toBe('run_not_cancelable');
  });

  it('answers 404 for a run of another organization', async () => {
    const { trigger, runPath } = await agent({ ring_ms: 10, talk_ms: 10 }, 0.5);
    const runId = await trigger();
    const other = await createOrganization(apps.dataSource);
    const response = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: other.adminKey });
    expect(response.status).toBe(404);
  });
});
