import { agentGraph, seedWorkflow } from '../support/fixtures';
import {
  CallableOrganization,
  expectError,
  issueKey,
  runPath,
  seedCallableOrganization,
  startCall,
  waitForRun,
} from '../support/public-api-helpers';
import { RUN_RECORD_FIELDS } from '../support/run-record-fields';
import { startTestApps, TestApps } from '../support/test-apps';

const ISO_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** The record's fields, whatever their order. */
const RUN_FIELDS = [...RUN_RECORD_FIELDS].sort();

function isObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Asserts the type the spec gives each field; `nullable` lists the fields that may be null in this state. */
function expectRunTypes(run: any, nullable: string[]) {
  expect(Object.keys(run).sort()).toEqual(RUN_FIELDS);
  const check = (field: string, ok: (value: any) => boolean) => {
    const value = run[field];
    const valid = (value === null && nullable.includes(field)) || (value !== null && ok(value));
    expect({ field, value, valid }).toEqual({ field, value, valid: true });
  };
  check('id', Number.isInteger);
  check('workflow_id', Number.isInteger);
  check('name', (value) => value === `WR-API-${run.id}`);
  check('mode', (value) => typeof value === 'string');
  check('created_at', (value) => ISO_DATE.test(value));
  check('is_completed', (value) => typeof value === 'boolean');
  check('transcript_url', (value) => typeof value === 'string');
  check('recording_url', (value) => typeof value === 'string');
  check('cost_info', (value) => isObject(value) && typeof value.call_duration_seconds === 'number');
  check('definition_id', Number.isInteger);
  check('call_type', (value) => ['inbound', 'outbound'].includes(value));
  check('initial_context', isObject);
  check('gathered_context', isObject);
  check('logs', isObject);
  check('annotations', isObject);
  check('status', (value) =>
    ['queued', 'dialing', 'ringing', 'in_progress', 'completed', 'busy', 'no_answer', 'failed', 'canceled'].includes(value),
  );
  check('environment', (value) => ['production', 'test'].includes(value));
  check('phone_number', (value) => /^\+\d{6,15}$/.test(value));
  check('from_number', (value) => /^\+\d{6,15}$/.test(value));
  check('telephony_configuration_id', Number.isInteger);
  check('provider_call_id', (value) => typeof value === 'string' && value.length > 0);
  check('duration_seconds', (value) => typeof value === 'number' && value >= 0);
  check('answered_at', (value) => ISO_DATE.test(value));
  check('ended_at', (value) => ISO_DATE.test(value));
  check('end_reason', (value) => typeof value === 'string');
  check('trigger_uuid', (value) => /^[0-9a-f-]{36}$/.test(value));
  check('updated_at', (value) => ISO_DATE.test(value));
}

describe('run record: GET /api/v1/workflow/{workflow_id}/runs/{run_id}', () => {
  let apps: TestApps;
  let main: CallableOrganization;
  let other: CallableOrganization;
  let completedRunId: number;
  let busyRunId: number;

  beforeAll(async () => {
    apps = await startTestApps();
    [main, other] = await Promise.all([
      seedCallableOrganization(apps.dataSource, { name: 'Run record' }),
      seedCallableOrganization(apps.dataSource, { name: 'Run record other' }),
    ]);
    const key = { key: main.org.adminKey };
    [completedRunId, busyRunId] = await Promise.all([
      startCall(apps.client, main.workflow.triggerUuid, { phone_number: '+14155552671', initial_context: { a: { b: 1 } } }, key),
      startCall(apps.client, main.workflow.triggerUuid, { phone_number: '+14155550001' }, { ...key, environment: 'test' }),
    ]);
    await Promise.all(
      [completedRunId, busyRunId].map((runId) => waitForRun(apps.client, main.org.adminKey, main.workflow.workflowId, runId)),
    );
  });
  afterAll(() => apps.close());

  const path = (runId = completedRunId, workflowId: number | string = main.workflow.workflowId) => runPath(workflowId, runId);

  describe('fields', () => {
    it('answers every field of the spec’s run record and the call fields, with their types, for a completed call', async () => {
      const response = await apps.client.get(path(), { key: main.org.adminKey });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expectRunTypes(response.body, []);
      expect(response.body).toEqual(
        expect.objectContaining({
          id: completedRunId,
          workflow_id: main.workflow.workflowId,
          mode: 'sandbox',
          call_type: 'outbound',
          status: 'completed',
          environment: 'production',
          phone_number: '+14155552671',
          from_number: main.config.fromNumbers[0],
          telephony_configuration_id: main.config.id,
          definition_id: main.workflow.publishedId,
          trigger_uuid: main.workflow.triggerUuid,
          initial_context: { a: { b: 1 } },
          is_completed: true,
        }),
      );
      expect(response.body.cost_info.call_duration_seconds).toBe(response.body.duration_seconds);
    });

    it('answers null for the fields a call that was never answered does not have, with the other types intact', async () => {
      const response = await apps.client.get(path(busyRunId), { key: main.org.adminKey });
      expect(response.status).toBe(200);
      expectRunTypes(response.body, ['transcript_url', 'recording_url', 'duration_seconds', 'answered_at']);
      expect(response.body).toEqual(
        expect.objectContaining({ status: 'busy', environment: 'test', is_completed: true, cost_info: { call_duration_seconds: 0 } }),
      );
    });

    it('answers the same record for X-API-Key and Authorization: Bearer', async () => {
      const [viaHeader, viaBearer] = await Promise.all([
        apps.client.get(path(), { key: main.org.adminKey }),
        apps.client.get(path(), { key: main.org.adminKey, bearer: true }),
      ]);
      expect(viaBearer.status).toBe(200);
      expect(viaBearer.body).toEqual(
        expect.objectContaining({ ...viaHeader.body, transcript_url: expect.any(String), recording_url: expect.any(String) }),
      );
    });
  });

  describe('access', () => {
    it('answers 401 without credentials', async () => {
      expectError(await apps.client.get(path()), 401, 'unauthorized');
    });

    it('answers 401 for an unknown key', async () => {
      expectError(await apps.client.get(path(), { key: 'vak_unknown' }), 401, 'unauthorized');
      expectError(await apps.client.get(path(), { key: 'vak_unknown', bearer: true }), 401, 'unauthorized');
    });

    it('checks X-API-Key when both headers are sent: an unknown one is 401 beside a valid Bearer key', async () => {
      const headers = { 'x-api-key': 'vak_unknown', authorization: `Bearer ${main.org.adminKey}` };
      expectError(await apps.client.get(path(), { headers }), 401, 'unauthorized');
      const swapped = { 'x-api-key': main.org.adminKey, authorization: 'Bearer vak_unknown' };
      expect((await apps.client.get(path(), { headers: swapped })).status).toBe(200);
    });

    it('is readable with a trigger key allowed for the workflow, in X-API-Key or Authorization: Bearer', async () => {
      const { key } = await issueKey(apps.dataSource, main.org.organizationId, { workflowIds: [main.workflow.workflowId] });
      expect((await apps.client.get(path(), { key })).status).toBe(200);
      expect((await apps.client.get(path(), { key, bearer: true })).status).toBe(200);
    });

    it('is readable with a trigger key without an allow-list', async () => {
      const { key } = await issueKey(apps.dataSource, main.org.organizationId, { workflowIds: null });
      expect((await apps.client.get(path(), { key })).status).toBe(200);
    });

    it('answers 403 for a trigger key not allowed for the workflow', async () => {
      const elsewhere = await seedWorkflow(apps.dataSource, main.org.organizationId, { published: (uuid) => agentGraph(uuid) });
      const { key } = await issueKey(apps.dataSource, main.org.organizationId, { workflowIds: [elsewhere.workflowId] });
      expectError(await apps.client.get(path(), { key }), 403, 'forbidden');
      expectError(await apps.client.get(path(), { key, bearer: true }), 403, 'forbidden');
    });

    it('answers 403 to a trigger key not allowed for the workflow whether the run exists or not, so it learns nothing of its runs', async () => {
      const elsewhere = await seedWorkflow(apps.dataSource, main.org.organizationId, { published: (uuid) => agentGraph(uuid) });
      const { key } = await issueKey(apps.dataSource, main.org.organizationId, { workflowIds: [elsewhere.workflowId] });
      for (const runId of [completedRunId, 2147483647]) {
        expectError(await apps.client.get(path(runId), { key }), 403, 'forbidden');
        expectError(await apps.client.post(`${path(runId)}/downloads`, { artifact: 'recording' }, { key }), 403, 'forbidden');
        expectError(await apps.client.post(`${path(runId)}/cancel`, {}, { key }), 403, 'forbidden');
      }
    });

    it('answers 404 when the run belongs to another workflow of the same organization', async () => {
      const elsewhere = await seedWorkflow(apps.dataSource, main.org.organizationId, { published: (uuid) => agentGraph(uuid) });
      expectError(await apps.client.get(path(completedRunId, elsewhere.workflowId), { key: main.org.adminKey }), 404, 'run_not_found');
    });

    it('answers 404 when the run belongs to another organization, whichever workflow id is used', async () => {
      expectError(await apps.client.get(path(), { key: other.org.adminKey }), 404, 'run_not_found');
      expectError(
        await apps.client.get(path(completedRunId, other.workflow.workflowId), { key: other.org.adminKey }),
        404,
        'run_not_found',
      );
    });

    it('answers 404 to a trigger key of another organization whose allow-list names this workflow', async () => {
      const { key } = await issueKey(apps.dataSource, other.org.organizationId, { workflowIds: [main.workflow.workflowId] });
      expectError(await apps.client.get(path(), { key }), 404, 'run_not_found');
    });

    it('answers 404 for an unknown run id', async () => {
      expectError(await apps.client.get(path(2147483647), { key: main.org.adminKey }), 404, 'run_not_found');
    });
  });

  describe('path ids', () => {
    it.each(['abc', '1.5', '-1', '0', '1e3', '0x10', '%20'])('answers 400 for the run id %s', async (runId) => {
      expectError(await apps.client.get(runPath(main.workflow.workflowId, runId), { key: main.org.adminKey }), 400, 'validation_failed');
    });

    it.each(['abc', '-3', '0'])('answers 400 for the workflow id %s', async (workflowId) => {
      expectError(await apps.client.get(runPath(workflowId, completedRunId), { key: main.org.adminKey }), 400, 'validation_failed');
    });

    it.each(['2147483648', '99999999999', '0002147483648'])('answers 404 for the run id %s, past int4 but no run', async (runId) => {
      expectError(await apps.client.get(runPath(main.workflow.workflowId, runId), { key: main.org.adminKey }), 404, 'run_not_found');
    });

    it.each(['9007199254740992', '99999999999999999999', '7'.repeat(100)])('answers 404 for the run id %s, past the ids a number holds exactly', async (runId) => {
      expectError(await apps.client.get(runPath(main.workflow.workflowId, runId), { key: main.org.adminKey }), 404, 'run_not_found');
    });

    it('answers 404 for a workflow id beyond the int range', async () => {
      expectError(await apps.client.get(runPath('2147483648', completedRunId), { key: main.org.adminKey }), 404, 'run_not_found');
    });

    it('answers a URL the router cannot read with the same error body and request id as any other error', async () => {
      const malformed = await apps.client.get(runPath(main.workflow.workflowId, '%E0'), { key: main.org.adminKey });
      expectError(malformed, 400, 'bad_request');
      expect(malformed.body.message).toMatch(/percent-encoded/);
      expectError(await apps.client.get(runPath(main.workflow.workflowId, '7'.repeat(101)), { key: main.org.adminKey }), 414, 'uri_too_long');
      expectError(await apps.client.post('/api/v1/public/agent/%zz', { phone_number: '+14155552671' }, { key: main.org.adminKey }), 400, 'bad_request');
    });

    it('answers 401, not 400, for a malformed id without credentials', async () => {
      expectError(await apps.client.get(runPath('abc', 'xyz')), 401, 'unauthorized');
    });
  });
});
