import { ApiResponse } from '../support/api-client';
import { TestOrganization } from '../support/fixtures';
import { TestApps } from '../support/test-apps';

/** A start → agent → end graph; `trigger` adds a trigger node (a path of `null` lets the server assign it). */
export function graph(options: { trigger?: string | null; greeting?: string; prompt?: string } = {}): Record<string, any> {
  const nodes: Array<Record<string, any>> = [
    { id: 'start', type: 'startCall', data: { prompt: options.prompt ?? 'You are a friendly assistant.', ...(options.greeting ? { greeting: options.greeting } : {}) } },
    { id: 'agent', type: 'agentNode', data: { prompt: 'Help the caller.' } },
    { id: 'end', type: 'endCall', data: {} },
  ];
  const edges = [
    { source: 'start', target: 'agent' },
    { source: 'agent', target: 'end' },
  ];
  if (options.trigger !== undefined) {
    nodes.unshift({ id: 'trigger', type: 'trigger', data: options.trigger === null ? {} : { trigger_path: options.trigger } });
    edges.unshift({ source: 'trigger', target: 'start' });
  }
  return { nodes, edges };
}

/** Issues a key through the API. */
export async function issueKey(
  apps: TestApps,
  org: TestOrganization,
  role: 'admin' | 'trigger',
  workflowIds?: number[],
): Promise<{ id: number; key: string }> {
  const response = await apps.client.post(
    '/api/v1/api-keys',
    { name: `${role} key`, role, ...(workflowIds ? { workflow_ids: workflowIds } : {}) },
    { key: org.adminKey },
  );
  expect(response.status).toBe(201);
  return { id: response.body.id, key: response.body.key };
}

/** Creates a workflow through the API and answers its body. */
export async function createWorkflow(apps: TestApps, org: TestOrganization, definition = graph({ trigger: null })): Promise<any> {
  const response = await apps.client.post('/api/v1/workflows', { name: 'Agent', definition }, { key: org.adminKey });
  expect(response.status).toBe(201);
  return response.body;
}

/** Creates, publishes and answers a workflow with one server-assigned trigger. */
export async function createPublishedWorkflow(apps: TestApps, org: TestOrganization, definition = graph({ trigger: null })) {
  const workflow = await createWorkflow(apps, org, definition);
  const published = await apps.client.post(`/api/v1/workflows/${workflow.id}/publish`, undefined, { key: org.adminKey });
  expect(published.status).toBe(200);
  return { workflowId: workflow.id as number, triggerUuid: workflow.triggers[0]?.uuid as string };
}

/** Creates a sandbox configuration through the API. */
export async function createSandboxConfiguration(apps: TestApps, org: TestOrganization, body: Record<string, unknown> = {}): Promise<any> {
  const response = await apps.client.post(
    '/api/v1/telephony-configurations',
    { name: 'Sandbox', provider: 'sandbox', from_numbers: ['+15005550006'], settings: { ring_ms: 30, talk_ms: 200 }, ...body },
    { key: org.adminKey },
  );
  expect(response.status).toBe(201);
  return response.body;
}

/** Asserts the error body every endpoint answers with. */
export function expectError(response: ApiResponse, status: number, code: string): void {
  expect({ status: response.status, code: response.body?.code }).toEqual({ status, code });
  expect(response.body).toEqual(
    expect.objectContaining({ statusCode: status, code, message: expect.any(String), request_id: expect.any(String) }),
  );
}
