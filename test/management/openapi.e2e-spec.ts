import { startTestApps, TestApps } from '../support/test-apps';

describe('management API: OpenAPI document', () => {
  let apps: TestApps;

  beforeAll(async () => {
    apps = await startTestApps({ dialer: false });
  });
  afterAll(() => apps.close());

  it('documents every management operation under a stable operationId', async () => {
    const response = await apps.client.get('/docs-json');
    expect(response.status).toBe(200);
    const operations: Record<string, string> = {};
    for (const [path, methods] of Object.entries<Record<string, { operationId?: string }>>(response.body.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        if (operation.operationId) operations[operation.operationId] = `${method.toUpperCase()} ${path}`;
      }
    }
    expect(operations).toMatchObject({
      createApiKey: 'POST /api/v1/api-keys',
      listApiKeys: 'GET /api/v1/api-keys',
      revokeApiKey: 'DELETE /api/v1/api-keys/{id}',
      createWorkflow: 'POST /api/v1/workflows',
      listWorkflows: 'GET /api/v1/workflows',
      getWorkflow: 'GET /api/v1/workflows/{id}',
      saveWorkflowDraft: 'PUT /api/v1/workflows/{id}/draft',
      publishWorkflow: 'POST /api/v1/workflows/{id}/publish',
      updateTrigger: 'PATCH /api/v1/triggers/{uuid}',
      createTelephonyConfiguration: 'POST /api/v1/telephony-configurations',
      listTelephonyConfigurations: 'GET /api/v1/telephony-configurations',
      getTelephonyConfiguration: 'GET /api/v1/telephony-configurations/{id}',
      updateTelephonyConfiguration: 'PATCH /api/v1/telephony-configurations/{id}',
      deleteTelephonyConfiguration: 'DELETE /api/v1/telephony-configurations/{id}',
    });
  });

  it('never documents a credentials field in a telephony configuration response', async () => {
    const response = await apps.client.get('/docs-json');
    const view = response.body.components.schemas.TelephonyConfigurationView;
    expect(Object.keys(view.properties)).toContain('has_credentials');
    expect(Object.keys(view.properties)).not.toContain('credentials');
  });
});
