import { createOrganization, TestOrganization } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';
import { graph } from './management-helpers';

/** Everything an operator does, only through the public HTTP API: no fixtures beyond the organization. */
describe('management API: from an empty organization to a completed call', () => {
  let apps: TestApps;
  let org: TestOrganization;

  beforeAll(async () => {
    apps = await startTestApps();
    org = await createOrganization(apps.dataSource);
  });
  afterAll(() => apps.close());

  it('configures a sandbox carrier, creates and publishes an agent, triggers it and reads the completed run', async () => {
    const key = org.adminKey;
    const config = await apps.client.post(
      '/api/v1/telephony-configurations',
      { name: 'Sandbox', provider: 'sandbox', from_numbers: ['+1 500 555 0006'], settings: { ring_ms: 30, talk_ms: 200 } },
      { key },
    );
    expect(config.status).toBe(201);
    expect(config.body.is_default_outbound).toBe(true);

    const workflow = await apps.client.post(
      '/api/v1/workflows',
      { name: 'Greeter', definition: graph({ trigger: null, greeting: 'Hello {{ initial_context.user.name }}!' }) },
      { key },
    );
    expect(workflow.status).toBe(201);
    const triggerUuid: string = workflow.body.triggers[0].uuid;

    // Not published yet: the production URL has nothing to run.
    const early = await apps.client.post(`/api/v1/public/agent/${triggerUuid}`, { phone_number: '+14155552671' }, { key });
    expect(early.status).toBe(404);

    const published = await apps.client.post(`/api/v1/workflows/${workflow.body.id}/publish`, undefined, { key });
    expect(published.status).toBe(200);
    const definitionId: number = published.body.published_definition.id;

    const triggerKey = await apps.client.post(
      '/api/v1/api-keys',
      { name: 'caller', role: 'trigger', workflow_ids: [workflow.body.id] },
      { key },
    );
    expect(triggerKey.status).toBe(201);

    const trigger = await apps.client.post(
      `/api/v1/public/agent/${triggerUuid}`,
      { phone_number: '+1 (415) 555-2671', initial_context: { user: { name: 'Ada' } } },
      { key: triggerKey.body.key, bearer: true },
    );
    expect(trigger.status).toBe(200);
    expect(trigger.body).toEqual({
      status: 'initiated',
      workflow_run_id: expect.any(Number),
      workflow_run_name: `WR-API-${trigger.body.workflow_run_id}`,
    });

    const runPath = `/api/v1/workflow/${workflow.body.id}/runs/${trigger.body.workflow_run_id}`;
    const run = await waitFor(
      async () => {
        const response = await apps.client.get(runPath, { key: triggerKey.body.key });
        return response.body.is_completed ? response.body : undefined;
      },
      { what: 'the run to complete' },
    );
    expect(run).toMatchObject({
      status: 'completed',
      mode: 'sandbox',
      environment: 'production',
      phone_number: '+14155552671',
      from_number: '+15005550006',
      telephony_configuration_id: config.body.id,
      definition_id: definitionId,
      trigger_uuid: triggerUuid,
      initial_context: { user: { name: 'Ada' } },
    });
    const transcript = await apps.client.get(run.transcript_url);
    expect(transcript.status).toBe(200);
    expect(transcript.body.turns[0]).toMatchObject({ speaker: 'agent', text: 'Hello Ada!' });
  });
});
