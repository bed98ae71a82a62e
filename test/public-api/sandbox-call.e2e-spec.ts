import { WorkflowRunStore } from '@app/persistence';
import { AgentSessionTokens } from '@app/telephony';
import { agentGraph, createOrganization, seedSandboxConfiguration, seedWorkflow, TestOrganization } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

describe('a sandbox call from trigger to downloadable artifacts', () => {
  let apps: TestApps;
  let org: TestOrganization;

  beforeAll(async () => {
    apps = await startTestApps();
    org = await createOrganization(apps.dataSource);
    await seedSandboxConfiguration(apps.dataSource, org.organizationId);
  });
  afterAll(() => apps.close());

  it('completes the call and serves its transcript and recording', async () => {
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, {
      published: (uuid) => agentGraph(uuid, { greeting: 'Hello {{ initial_context.user.name }}!' }),
    });
    const trigger = await apps.client.post(
      `/api/v1/public/agent/${workflow.triggerUuid}`,
      { phone_number: '+1 (415) 555-2671', initial_context: { user: { name: 'Ada' } } },
      { key: org.adminKey },
    );
    expect(trigger.status).toBe(200);
    expect(trigger.body).toEqual({
      status: 'initiated',
      workflow_run_id: expect.any(Number),
      workflow_run_name: `WR-API-${trigger.body.workflow_run_id}`,
    });

    const runPath = `/api/v1/workflow/${workflow.workflowId}/runs/${trigger.body.workflow_run_id}`;
    const run = await waitFor(
      async () => {
        const response = await apps.client.get(runPath, { key: org.adminKey });
        return response.body.is_completed ? response.body : undefined;
      },
      { what: 'the run to complete' },
    );
    expect(run).toMatchObject({
      status: 'completed',
      mode: 'sandbox',
      phone_number: '+14155552671',
      definition_id: workflow.publishedId,
      initial_context: { user: { name: 'Ada' } },
      environment: 'production',
      call_type: 'outbound',
    });
    const transcript = await apps.client.get(run.transcript_url);
    expect(transcript.status).toBe(200);
    expect(transcript.body.turns[0]).toMatchObject({ speaker: 'agent', text: 'Hello Ada!' });
    const recording = await fetch(run.recording_url);
    expect(recording.status).toBe(200);
    expect(recording.headers.get('content-type')).toBe('audio/wav');
    const wav = Buffer.from(await recording.arrayBuffer());
    expect(wav.subarray(0, 4).toString('ascii')).toBe('RIFF');
  });

  it('moves a call over at once past ringing and answered only when no built-in agent has to answer it', async () => {
    const statusStatements = async (builtinAgent: boolean) => {
      const other = await createOrganization(apps.dataSource, `Instant calls, agent ${builtinAgent}`);
      await seedSandboxConfiguration(apps.dataSource, other.organizationId, { settings: { ring_ms: 0, talk_ms: 0, builtin_agent: builtinAgent } });
      const workflow = await seedWorkflow(apps.dataSource, other.organizationId, { published: (uuid) => agentGraph(uuid) });
      const spy = jest.spyOn(apps.dialer!.get(WorkflowRunStore), 'transitionMany');
      const minted = jest.spyOn(apps.dialer!.get(AgentSessionTokens), 'sign');
      try {
        const trigger = await apps.client.post(`/api/v1/public/agent/${workflow.triggerUuid}`, { phone_number: '+14155552671' }, { key: other.adminKey });
        const runId: number = trigger.body.workflow_run_id;
        const run = await waitFor(
          async () => {
            const response = await apps.client.get(`/api/v1/workflow/${workflow.workflowId}/runs/${runId}`, { key: other.adminKey });
            return response.body.is_completed ? response.body : undefined;
          },
          { what: 'the run to complete' },
        );
        expect(run).toMatchObject({ status: 'completed', transcript_url: expect.any(String), recording_url: expect.any(String) });
        const [{ logs }] = await apps.dataSource.query(`SELECT logs FROM workflow_runs WHERE id = $1`, [runId]);
        expect(logs.events.filter((entry: { event: string }) => entry.event.startsWith('carrier.')).map((entry: { status: string }) => entry.status)).toEqual([
          'ringing',
          'in_progress',
          'completed',
        ]);
        // The sandbox, like every carrier but Telnyx, is not given the agent stream at dial time: no token is minted for it.
        expect(minted).not.toHaveBeenCalled();
        return spy.mock.calls.filter(([, , moves]) => moves.some((move) => move.runId === runId)).length;
      } finally {
        spy.mockRestore();
        minted.mockRestore();
      }
    };
    expect(await statusStatements(false)).toBe(1);
    // The built-in agent fetches the answer URL while the run is answered, so the answer is a move of its own.
    expect(await statusStatements(true)).toBe(3);
  });
});
