import { Workflow } from '@app/persistence';
import { createOrganization } from '../support/fixtures';
import { expectError } from '../support/public-api-helpers';
import { startTestApps, TestApps } from '../support/test-apps';

describe('health and OpenAPI', () => {
  let apps: TestApps;

  beforeAll(async () => {
    apps = await startTestApps({ dialer: false });
  });
  afterAll(() => apps.close());

  it("answers liveness, and readiness with Postgres up (the API's one requirement: a trigger does not need Redis)", async () => {
    expect((await apps.client.get('/health/live')).status).toBe(200);
    const ready = await apps.client.get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.info).toEqual({ postgres: { status: 'up' } });
  });

  it('serves the OpenAPI document generated from the code, with stable operation ids', async () => {
    const docs = await apps.client.get('/docs-json');
    expect(docs.status).toBe(200);
    const operationIds = Object.values(docs.body.paths as Record<string, Record<string, { operationId?: string }>>)
      .flatMap((methods) => Object.values(methods))
      .map((operation) => operation.operationId);
    expect(operationIds).toEqual(
      expect.arrayContaining(['initiateCall', 'initiateTestCall', 'getWorkflowRun', 'listWorkflowRuns', 'createRunDownload']),
    );
    expect((await apps.client.get('/docs')).status).toBe(200);
  });

  it('answers an unknown route with the standard error body and a request id', async () => {
    const response = await apps.client.get('/api/v1/nope', { headers: { 'x-request-id': 'trace-123' } });
    expect(response.status).toBe(404);
    expect(response.headers.get('x-request-id')).toBe('trace-123');
    expect(response.body).toEqual({ statusCode: 404, code: 'not_found', message: expect.any(String), request_id: 'trace-123' });
  });

  it('answers 415 for a form body on a management endpoint, and creates nothing', async () => {
    const org = await createOrganization(apps.dataSource, 'Form body');
    const workflows = () => apps.dataSource.getRepository(Workflow).countBy({ organizationId: org.organizationId });
    const before = await workflows();
    const response = await apps.client.post('/api/v1/workflows', undefined, {
      key: org.adminKey,
      raw: 'name=Form+agent',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectError(response, 415, 'unsupported_media_type');
    expect(await workflows()).toBe(before);
  });

  it('answers an array body on a management endpoint as one problem, not one per index', async () => {
    const org = await createOrganization(apps.dataSource, 'Array body');
    const response = await apps.client.post('/api/v1/workflows', [{ name: 'Agent' }], { key: org.adminKey });
    expectError(response, 400, 'validation_failed');
    expect(response.body.message).toBe('The body must be a JSON object (one request per object: an array is not taken)');
  });
});
