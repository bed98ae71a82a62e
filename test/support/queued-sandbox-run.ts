import { agentGraph, createOrganization, seedSandboxConfiguration, seedWorkflow } from './fixtures';
import { TestApps } from './test-apps';

/**
 * A queued run of an organization of its own (a sandbox configuration, a
 * published agent), triggered through the API: its dial job as the trigger
 * enqueued it, and what it was triggered through.
 */
export async function acceptedSandboxRun(apps: TestApps) {
  const org = await createOrganization(apps.dataSource);
  const configuration = await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 20, talk_ms: 50 } });
  const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
  const response = await apps.client.post(`/api/v1/public/agent/${workflow.triggerUuid}`, { phone_number: '+14155550100' }, { key: org.adminKey });
  if (response.status !== 200) throw new Error(`the trigger answered ${response.status}: ${JSON.stringify(response.body)}`);
  const job = { runId: response.body.workflow_run_id as number, organizationId: org.organizationId };
  return { job, org, configuration, workflow };
}

/** `acceptedSandboxRun`'s dial job. */
export async function queuedSandboxRun(apps: TestApps): Promise<{ runId: number; organizationId: number }> {
  return (await acceptedSandboxRun(apps)).job;
}
