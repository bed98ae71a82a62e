import { Workflow } from '@app/persistence';
import { ApiResponse } from '../support/api-client';
import { CallableOrganization, countRuns, expectError, seedCallableOrganization, triggerPath } from '../support/public-api-helpers';
import { startTestApps, TestApps } from '../support/test-apps';

const PHONE = '+14155552671';

/** A trigger body around `name`'s bytes, as sent: `{"phone_number": ..., "initial_context": {"name": <name>}}`. */
function triggerBytes(name: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`{"phone_number":"${PHONE}","initial_context":{"name":"`), name, Buffer.from('"}}')]);
}

describe('JSON bodies: UTF-8 only', () => {
  let apps: TestApps;
  let target: CallableOrganization;

  beforeAll(async () => {
    apps = await startTestApps({ dialer: false });
    target = await seedCallableOrganization(apps.dataSource, { name: 'Body encoding' });
  });
  afterAll(() => apps.close());

  const runCount = () => countRuns(apps.dataSource, target.org.organizationId);
  const workflowCount = () => apps.dataSource.getRepository(Workflow).countBy({ organizationId: target.org.organizationId });

  function trigger(raw: Buffer | string, headers: Record<string, string> = {}) {
    return apps.client.post(triggerPath(target.workflow.triggerUuid), undefined, { key: target.org.adminKey, raw, headers });
  }

  function createWorkflow(raw: Buffer | string, headers: Record<string, string> = {}) {
    return apps.client.post('/api/v1/workflows', undefined, { key: target.org.adminKey, raw, headers });
  }

  /** A workflow body whose name is `name`'s bytes, as sent. */
  function workflowBytes(name: Buffer): Buffer {
    const definition = JSON.stringify({ nodes: [{ id: 's', type: 'startCall', data: { prompt: 'hi' } }], edges: [] });
    return Buffer.concat([Buffer.from('{"name":"'), name, Buffer.from(`","definition":${definition}}`)]);
  }

  async function expectNoRun(send: () => Promise<ApiResponse>, status: number, code: string): Promise<ApiResponse> {
    const before = await runCount();
    const response = await send();
    expectError(response, status, code);
    expect(await runCount()).toBe(before);
    return response;
  }

  describe('bytes that are not UTF-8', () => {
    it.each<[string, Buffer]>([
      ['Latin-1 é (0xE9)', Buffer.from('Jos\xE9', 'latin1')],
      ['a lone continuation byte', Buffer.from([0x4a, 0x80])],
      ['an overlong encoding of "/"', Buffer.from([0xc0, 0xaf])],
      ['an encoded UTF-16 surrogate', Buffer.from([0xed, 0xa0, 0x80])],
      ['a sequence cut short', Buffer.from([0xe2, 0x82])],
      ['byte 0xFF', Buffer.from([0xff])],
    ])('answers 400 invalid_json, saying the body is not UTF-8, and stores no run, for a trigger body holding %s', async (_, name) => {
      const response = await expectNoRun(() => trigger(triggerBytes(name)), 400, 'invalid_json');
      expect(response.body.message).toMatch(/not valid UTF-8/);
    });

    it('answers 400 invalid_json for non-UTF-8 bytes sent with charset=utf-8 declared', async () => {
      await expectNoRun(
        () => trigger(triggerBytes(Buffer.from('Jos\xE9', 'latin1')), { 'content-type': 'application/json; charset=utf-8' }),
        400,
        'invalid_json',
      );
    });

    it('answers 400 invalid_json, and stores no workflow, for a workflow name holding byte 0xE9', async () => {
      const before = await workflowCount();
      const response = await createWorkflow(workflowBytes(Buffer.from('Caf\xE9', 'latin1')));
      expectError(response, 400, 'invalid_json');
      expect(response.body.message).toMatch(/not valid UTF-8/);
      expect(await workflowCount()).toBe(before);
    });

    it('still answers 400 invalid_json for malformed JSON and a __proto__ key, and 400 validation_failed for an empty body', async () => {
      await expectNoRun(() => trigger('{"phone_number":'), 400, 'invalid_json');
      await expectNoRun(() => trigger(''), 400, 'validation_failed');
      await expectNoRun(() => trigger(`{"phone_number":"${PHONE}","initial_context":{"__proto__":{"x":1}}}`), 400, 'invalid_json');
    });
  });

  describe('an empty body declared as JSON', () => {
    // Many HTTP clients declare JSON on every request; on a route that takes no body, that is no body.
    it('is taken as no body by routes that take none: a publish, a cancel and a DELETE are done', async () => {
      const options = { key: target.org.adminKey, raw: '', headers: { 'content-type': 'application/json' } };
      const definition = { nodes: [{ id: 's', type: 'startCall', data: { prompt: 'hi' } }], edges: [] };
      const workflow = await apps.client.post('/api/v1/workflows', { name: 'Empty bodies', definition }, { key: target.org.adminKey });
      expect(workflow.status).toBe(201);
      const published = await apps.client.post(`/api/v1/workflows/${workflow.body.id}/publish`, undefined, options);
      expect(published.status).toBe(200);

      const placed = await trigger(JSON.stringify({ phone_number: PHONE }));
      expect(placed.status).toBe(200);
      const runPath = `/api/v1/workflow/${target.workflow.workflowId}/runs/${placed.body.workflow_run_id}`;
      const canceled = await apps.client.post(`${runPath}/cancel`, undefined, options);
      expect(canceled.status).toBe(200);
      expect((await apps.client.get(runPath, { key: target.org.adminKey })).body.status).toBe('canceled');

      const config = await apps.client.post('/api/v1/telephony-configurations', { name: 'Spare', provider: 'sandbox', from_numbers: ['+15005550006'] }, { key: target.org.adminKey });
      expect(config.status).toBe(201);
      expect((await apps.client.delete(`/api/v1/telephony-configurations/${config.body.id}`, options)).status).toBe(204);
      expect((await apps.client.get(`/api/v1/telephony-configurations/${config.body.id}`, { key: target.org.adminKey })).status).toBe(404);
    });
  });

  describe('declared charset', () => {
    it.each([
      // Every way of writing the parameter is the unit test's (body-media-type.spec.ts); here, what the API answers.
      'application/json; charset=iso-8859-1',
      'application/json; foo="bar"; charset=utf-16',
    ])('answers 415 unsupported_media_type, and stores no run, for a trigger body declared as %s (even in ASCII)', async (type) => {
      const response = await expectNoRun(() => trigger(JSON.stringify({ phone_number: PHONE }), { 'content-type': type }), 415, 'unsupported_media_type');
      expect(response.body.message).toMatch(/UTF-8/);
    });

    it('answers 415 unsupported_media_type, and stores no workflow, for a workflow declared as charset=iso-8859-1', async () => {
      const before = await workflowCount();
      const response = await createWorkflow(workflowBytes(Buffer.from('Caf\xE9', 'latin1')), {
        'content-type': 'application/json; charset=iso-8859-1',
      });
      expectError(response, 415, 'unsupported_media_type');
      expect(await workflowCount()).toBe(before);
    });

    it.each([
      'application/json',
      'application/json; charset=utf-8',
      'application/json; charset=UTF-8',
      'application/json; charset="UTF-8"',
      'Application/JSON ; Charset=utf-8',
      'application/json; foo="a; charset=latin1"; charset=utf-8',
    ])('takes a UTF-8 body declared as %s and stores its text as sent', async (type) => {
      const response = await trigger(triggerBytes(Buffer.from('José 😀', 'utf8')), { 'content-type': type });
      expect(response.status).toBe(200);
      const [row] = await apps.dataSource.query(`SELECT initial_context FROM workflow_runs WHERE id = $1`, [response.body.workflow_run_id]);
      expect(row.initial_context).toStrictEqual({ name: 'José 😀' });
    });

    it('takes a UTF-8 body that starts with a byte order mark', async () => {
      const response = await trigger(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify({ phone_number: PHONE }))]));
      expect(response.status).toBe(200);
    });

    it('creates a workflow whose UTF-8 name is declared as charset=UTF-8, storing the name as sent', async () => {
      const response = await createWorkflow(workflowBytes(Buffer.from('Café', 'utf8')), { 'content-type': 'application/json; charset=UTF-8' });
      expect(response.status).toBe(201);
      const stored = await apps.dataSource.getRepository(Workflow).findOneByOrFail({ id: response.body.id });
      expect(stored.name).toBe('Café');
    });
  });
});
