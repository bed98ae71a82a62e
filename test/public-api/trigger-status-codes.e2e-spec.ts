import { randomUUID } from 'node:crypto';
import { ApiKey, ApiTrigger, TelephonyConfiguration, WorkflowDefinition } from '@app/persistence';
import { agentGraph, createOrganization, seedSandboxConfiguration, seedWorkflow } from '../support/fixtures';
import {
  CallableOrganization,
  countRuns,
  expectError,
  headOnlyPost,
  issueKey,
  seedCallableOrganization,
  triggerPath,
} from '../support/public-api-helpers';
import { startTestApps, TestApps } from '../support/test-apps';

const BODY = { phone_number: '+14155552671' };


describe('trigger endpoints: status codes', () => {
  let apps: TestApps;
  let main: CallableOrganization;
  let other: CallableOrganization;

  beforeAll(async () => {
    // No key cache, so a revoked key answers 401 on the very next request.
    apps = await startTestApps({ env: { API_KEY_CACHE_TTL_MS: '0' } });
    main = await seedCallableOrganization(apps.dataSource, { name: 'Status codes' });
    other = await seedCallableOrganization(apps.dataSource, { name: 'Status codes other' });
  });
  afterAll(() => apps.close());

  /** Sends the request, asserts the error and that no run was stored for either organization. */
  async function expectRejected(
    send: () => Promise<import('../support/api-client').ApiResponse>,
    status: number,
    code: string,
    organizationIds: number[] = [main.org.organizationId, other.org.organizationId],
  ) {
    const before = await Promise.all(organizationIds.map((id) => countRuns(apps.dataSource, id)));
    const response = await send();
    expectError(response, status, code);
    const after = await Promise.all(organizationIds.map((id) => countRuns(apps.dataSource, id)));
    expect(after).toEqual(before);
    return response;
  }

  describe('200', () => {
    it.each(['production', 'test'] as const)(
      'answers 200 {status: initiated, workflow_run_id, workflow_run_name: WR-API-<id>} on the %s URL',
      async (environment) => {
        const before = await countRuns(apps.dataSource, main.org.organizationId);
        const response = await apps.client.post(triggerPath(main.workflow.triggerUuid, environment), BODY, {
          key: main.org.adminKey,
        });
        expect(response.status).toBe(200);
        expect(response.headers.get('content-type')).toMatch(/^application\/json/);
        expect(response.body).toEqual({
          status: 'initiated',
          workflow_run_id: expect.any(Number),
          workflow_run_name: `WR-API-${response.body.workflow_run_id}`,
        });
        expect(Number.isInteger(response.body.workflow_run_id)).toBe(true);
        const [row] = await apps.dataSource.query(`SELECT name, environment, workflow_id FROM workflow_runs WHERE id = $1`, [
          response.body.workflow_run_id,
        ]);
        expect(row).toEqual({ name: response.body.workflow_run_name, environment, workflow_id: main.workflow.workflowId });
        expect(await countRuns(apps.dataSource, main.org.organizationId)).toBe(before + 1);
      },
    );

    it('accepts Authorization: Bearer <key> like X-API-Key', async () => {
      const response = await apps.client.post(triggerPath(main.workflow.triggerUuid), BODY, {
        key: main.org.adminKey,
        bearer: true,
      });
      expect(response.status).toBe(200);
      expect(response.body.status).toBe('initiated');
    });

    it('accepts a trigger key whose allow-list includes the workflow', async () => {
      const { key } = await issueKey(apps.dataSource, main.org.organizationId, { workflowIds: [main.workflow.workflowId] });
      const response = await apps.client.post(triggerPath(main.workflow.triggerUuid), BODY, { key });
      expect(response.status).toBe(200);
    });

    it('accepts a trigger key without an allow-list for every workflow of its organization', async () => {
      const { key } = await issueKey(apps.dataSource, main.org.organizationId, { workflowIds: null });
      const response = await apps.client.post(triggerPath(main.workflow.triggerUuid, 'test'), BODY, { key });
      expect(response.status).toBe(200);
    });

    it('normalises the phone number to E.164 before storing it', async () => {
      const response = await apps.client.post(
        triggerPath(main.workflow.triggerUuid),
        { phone_number: ' +1 (415) 555-2671 ' },
        { key: main.org.adminKey },
      );
      expect(response.status).toBe(200);
      const [row] = await apps.dataSource.query(`SELECT phone_number FROM workflow_runs WHERE id = $1`, [
        response.body.workflow_run_id,
      ]);
      expect(row.phone_number).toBe('+14155552671');
    });

    it("uses the organization's default configuration when telephony_configuration_id is omitted or null", async () => {
      for (const body of [BODY, { ...BODY, telephony_configuration_id: null }]) {
        const response = await apps.client.post(triggerPath(main.workflow.triggerUuid), body, { key: main.org.adminKey });
        expect(response.status).toBe(200);
        const [row] = await apps.dataSource.query(`SELECT telephony_configuration_id FROM workflow_runs WHERE id = $1`, [
          response.body.workflow_run_id,
        ]);
        expect(row.telephony_configuration_id).toBe(main.config.id);
      }
    });

    it('uses the configuration named by telephony_configuration_id instead of the default', async () => {
      const second = await seedSandboxConfiguration(apps.dataSource, main.org.organizationId, {
        name: 'Second line',
        isDefaultOutbound: false,
        fromNumbers: ['+15005550077'],
      });
      const response = await apps.client.post(
        triggerPath(main.workflow.triggerUuid),
        { ...BODY, telephony_configuration_id: second.id },
        { key: main.org.adminKey },
      );
      expect(response.status).toBe(200);
      const [row] = await apps.dataSource.query(`SELECT telephony_configuration_id FROM workflow_runs WHERE id = $1`, [
        response.body.workflow_run_id,
      ]);
      expect(row.telephony_configuration_id).toBe(second.id);
    });

    it('accepts the trigger UUID in upper case', async () => {
      const response = await apps.client.post(triggerPath(main.workflow.triggerUuid.toUpperCase()), BODY, {
        key: main.org.adminKey,
      });
      expect(response.status).toBe(200);
    });
  });

  describe('401', () => {
    it('answers 401 without a key', async () => {
      await expectRejected(() => apps.client.post(triggerPath(main.workflow.triggerUuid), BODY), 401, 'unauthorized');
    });

    it.each(['production', 'test'] as const)(
      'answers 401, not 400, without a key even when the body is invalid (%s URL)',
      async (environment) => {
        await expectRejected(
          () => apps.client.post(triggerPath(main.workflow.triggerUuid, environment), { phone_number: 12, bogus: true }),
          401,
          'unauthorized',
        );
      },
    );

    // Refused while the body is read, which a request without a valid key no longer reaches: 400, 413, 415 before.
    const UNREADABLE_BODIES: Array<[string, string | Buffer, Record<string, string>]> = [
      ['malformed JSON', '{"phone_number": "+14155552671"', {}],
      ['JSON sent as text/plain', JSON.stringify(BODY), { 'content-type': 'text/plain' }],
      ['form fields', 'phone_number=%2B14155552671', { 'content-type': 'application/x-www-form-urlencoded' }],
      ['a body over 1 MiB', JSON.stringify({ ...BODY, initial_context: { pad: 'x'.repeat(1024 * 1024) } }), {}],
      ['bytes that are not UTF-8', Buffer.from([0x7b, 0xff, 0x7d]), {}],
      ['an empty body declared as JSON', '', {}],
    ];

    it.each(UNREADABLE_BODIES)('answers 401, without a key or with an unknown one, whatever the body: %s', async (_what, raw, headers) => {
      const path = triggerPath(main.workflow.triggerUuid);
      await expectRejected(() => apps.client.post(path, undefined, { raw, headers }), 401, 'unauthorized');
      await expectRejected(() => apps.client.post(path, undefined, { raw, headers, key: 'vak_not-a-real-key' }), 401, 'unauthorized');
      // With a valid key the body's own refusal stands.
      const read = await apps.client.post(path, undefined, { raw, headers, key: main.org.adminKey });
      expect([400, 413, 415]).toContain(read.status);
    });

    it('answers 401 as soon as the head has arrived, without waiting for the body', async () => {
      const response = await headOnlyPost(apps.baseUrl, triggerPath(main.workflow.triggerUuid), { 'content-type': 'application/json' });
      expect(response.status).toBe(401);
      expect(JSON.parse(response.body)).toMatchObject({ statusCode: 401, code: 'unauthorized' });
    });

    it('answers 401 without a key even for an unknown trigger', async () => {
      await expectRejected(() => apps.client.post(triggerPath(randomUUID()), BODY), 401, 'unauthorized');
    });

    it.each(['production', 'test'] as const)('answers 401 for an unknown key, in X-API-Key or Authorization: Bearer (%s URL)', async (environment) => {
      await expectRejected(
        () => apps.client.post(triggerPath(main.workflow.triggerUuid, environment), BODY, { key: 'vak_not-a-real-key' }),
        401,
        'unauthorized',
      );
      await expectRejected(
        () => apps.client.post(triggerPath(main.workflow.triggerUuid, environment), BODY, { key: 'vak_not-a-real-key', bearer: true }),
        401,
        'unauthorized',
      );
    });

    it('checks X-API-Key when both headers are sent: an unknown one is 401 beside a valid Bearer key, and a valid one is taken beside an unknown Bearer key', async () => {
      await expectRejected(
        () =>
          apps.client.post(triggerPath(main.workflow.triggerUuid), BODY, {
            headers: { 'x-api-key': 'vak_not-a-real-key', authorization: `Bearer ${main.org.adminKey}` },
          }),
        401,
        'unauthorized',
      );
      const accepted = await apps.client.post(triggerPath(main.workflow.triggerUuid), BODY, {
        headers: { 'x-api-key': main.org.adminKey, authorization: 'Bearer vak_not-a-real-key' },
      });
      expect(accepted.status).toBe(200);
    });

    it('answers 401 for an Authorization header that is not a Bearer key', async () => {
      for (const authorization of [`Basic ${Buffer.from('a:b').toString('base64')}`, 'Bearer', `Token ${main.org.adminKey}`]) {
        await expectRejected(
          () => apps.client.post(triggerPath(main.workflow.triggerUuid), BODY, { headers: { authorization } }),
          401,
          'unauthorized',
        );
      }
    });

    it.each(['production', 'test'] as const)('answers 401 for a revoked key (%s URL)', async (environment) => {
      const { id, key } = await issueKey(apps.dataSource, main.org.organizationId);
      const path = triggerPath(main.workflow.triggerUuid, environment);
      const accepted = await apps.client.post(path, BODY, { key });
      expect(accepted.status).toBe(200);
      await apps.dataSource.getRepository(ApiKey).update({ id }, { revokedAt: new Date() });
      await expectRejected(() => apps.client.post(path, BODY, { key }), 401, 'unauthorized');
      await expectRejected(() => apps.client.post(path, BODY, { key, bearer: true }), 401, 'unauthorized');
    });
  });

  describe('403', () => {
    it.each(['production', 'test'] as const)('answers 403 for a key of another organization (%s URL)', async (environment) => {
      await expectRejected(
        () => apps.client.post(triggerPath(main.workflow.triggerUuid, environment), BODY, { key: other.org.adminKey }),
        403,
        'forbidden',
      );
    });

    it('answers 403 for a trigger key whose allow-list excludes the workflow', async () => {
      const { key } = await issueKey(apps.dataSource, main.org.organizationId, { workflowIds: [main.workflow.workflowId + 100000] });
      await expectRejected(() => apps.client.post(triggerPath(main.workflow.triggerUuid), BODY, { key }), 403, 'forbidden');
      await expectRejected(
        () => apps.client.post(triggerPath(main.workflow.triggerUuid, 'test'), BODY, { key, bearer: true }),
        403,
        'forbidden',
      );
    });

    it('answers 403 for a trigger key with an empty allow-list', async () => {
      const { key } = await issueKey(apps.dataSource, main.org.organizationId, { workflowIds: [] });
      await expectRejected(() => apps.client.post(triggerPath(main.workflow.triggerUuid), BODY, { key }), 403, 'forbidden');
    });

    /** Active triggers of `main` whose definitions answer the organization's own key a 404 on the URLs named by `unrunnable`. */
    const UNRUNNABLE: Array<{
      state: string;
      unrunnable: Array<'production' | 'test'>;
      seed: () => Promise<{ workflowId: number; triggerUuid: string }>;
    }> = [
      {
        state: 'only a draft',
        unrunnable: ['production'],
        seed: () => seedWorkflow(apps.dataSource, main.org.organizationId, { draft: (uuid) => agentGraph(uuid) }),
      },
      {
        state: 'a published version and a draft without the trigger',
        unrunnable: ['production', 'test'],
        seed: () =>
          seedWorkflow(apps.dataSource, main.org.organizationId, {
            published: () => agentGraph(randomUUID()),
            draft: () => agentGraph(randomUUID()),
          }),
      },
      {
        state: 'only a draft without the trigger',
        unrunnable: ['production', 'test'],
        seed: () => seedWorkflow(apps.dataSource, main.org.organizationId, { draft: () => agentGraph(randomUUID()) }),
      },
      {
        state: 'its trigger deactivated',
        unrunnable: ['production', 'test'],
        seed: async () => {
          const workflow = await seedWorkflow(apps.dataSource, main.org.organizationId, {
            published: (uuid) => agentGraph(uuid),
            draft: (uuid) => agentGraph(uuid),
          });
          await apps.dataSource.getRepository(ApiTrigger).update({ uuid: workflow.triggerUuid }, { isActive: false });
          return workflow;
        },
      },
      {
        state: 'every definition archived',
        unrunnable: ['production', 'test'],
        seed: async () => {
          const workflow = await seedWorkflow(apps.dataSource, main.org.organizationId, { published: (uuid) => agentGraph(uuid) });
          await apps.dataSource.getRepository(WorkflowDefinition).update({ workflowId: workflow.workflowId }, { status: 'archived' });
          return workflow;
        },
      },
    ];

    it.each(UNRUNNABLE.map(({ state }) => state))(
      "answers a key without access the 403 of a runnable agent, not the agent's state, when the workflow has %s",
      async (state) => {
        const { seed, unrunnable } = UNRUNNABLE.find((candidate) => candidate.state === state)!;
        const workflow = await seed();
        // What the same keys are answered for the organization's published agent.
        const excluded = await issueKey(apps.dataSource, main.org.organizationId, { workflowIds: [main.workflow.workflowId] });
        const published = await apps.client.post(triggerPath(main.workflow.triggerUuid), BODY, { key: other.org.adminKey });
        const publishedExcluded = await apps.client.post(triggerPath(main.workflow.triggerUuid), BODY, {
          key: (await issueKey(apps.dataSource, main.org.organizationId, { workflowIds: [workflow.workflowId] })).key,
        });
        expectError(published, 403, 'forbidden');
        expectError(publishedExcluded, 403, 'forbidden');
        for (const environment of ['production', 'test'] as const) {
          if (unrunnable.includes(environment)) {
            // The owner's key learns the state: a 404 of one kind or another.
            const owner = await apps.client.post(triggerPath(workflow.triggerUuid, environment), BODY, { key: main.org.adminKey });
            expect({ environment, status: owner.status }).toEqual({ environment, status: 404 });
          }
          // Another organization's key, and a key of the organization allowed only other workflows, do not.
          for (const [intruder, key, reference] of [
            ['another organization’s key', other.org.adminKey, published],
            ['a key allowed only other workflows', excluded.key, publishedExcluded],
          ] as const) {
            const response = await expectRejected(
              () => apps.client.post(triggerPath(workflow.triggerUuid, environment), BODY, { key }),
              403,
              'forbidden',
            );
            expect({ intruder, environment, message: response.body.message }).toEqual({
              intruder,
              environment,
              message: reference.body.message,
            });
          }
        }
      },
    );
  });

  describe('404', () => {
    it.each(['production', 'test'] as const)('answers 404 for an unknown trigger UUID (%s URL)', async (environment) => {
      await expectRejected(
        () => apps.client.post(triggerPath(randomUUID(), environment), BODY, { key: main.org.adminKey }),
        404,
        'trigger_not_found',
      );
    });

    it.each(['not-a-uuid', '12345', `${randomUUID()}x`, 'g'.repeat(8) + '-0000-0000-0000-000000000000'])(
      'answers 404 for the malformed trigger UUID %s',
      async (uuid) => {
        await expectRejected(
          () => apps.client.post(triggerPath(uuid), BODY, { key: main.org.adminKey }),
          404,
          'trigger_not_found',
        );
      },
    );

    it('answers 404 for an inactive trigger on both URLs', async () => {
      const workflow = await seedWorkflow(apps.dataSource, main.org.organizationId, {
        published: (uuid) => agentGraph(uuid),
        draft: (uuid) => agentGraph(uuid),
      });
      await apps.dataSource.getRepository(ApiTrigger).update({ uuid: workflow.triggerUuid }, { isActive: false });
      for (const environment of ['production', 'test'] as const) {
        await expectRejected(
          () => apps.client.post(triggerPath(workflow.triggerUuid, environment), BODY, { key: main.org.adminKey }),
          404,
          'trigger_not_found',
        );
      }
    });

    it('answers 404 on the production URL when the workflow has no published definition, while the test URL runs the draft', async () => {
      const workflow = await seedWorkflow(apps.dataSource, main.org.organizationId, { draft: (uuid) => agentGraph(uuid) });
      await expectRejected(
        () => apps.client.post(triggerPath(workflow.triggerUuid), BODY, { key: main.org.adminKey }),
        404,
        'agent_not_published',
      );
      const test = await apps.client.post(triggerPath(workflow.triggerUuid, 'test'), BODY, { key: main.org.adminKey });
      expect(test.status).toBe(200);
    });

    it('answers 404 on the production URL when the published definition no longer contains the trigger node', async () => {
      const workflow = await seedWorkflow(apps.dataSource, main.org.organizationId, {
        published: () => agentGraph(randomUUID()),
        draft: (uuid) => agentGraph(uuid),
      });
      await expectRejected(
        () => apps.client.post(triggerPath(workflow.triggerUuid), BODY, { key: main.org.adminKey }),
        404,
        'trigger_not_found',
      );
      const test = await apps.client.post(triggerPath(workflow.triggerUuid, 'test'), BODY, { key: main.org.adminKey });
      expect(test.status).toBe(200);
    });

    it('answers 404 on the test URL when the draft no longer contains the trigger node', async () => {
      const workflow = await seedWorkflow(apps.dataSource, main.org.organizationId, {
        published: (uuid) => agentGraph(uuid),
        draft: (uuid) => {
          const graph = agentGraph(uuid);
          return { nodes: graph.nodes.filter((node) => node.type !== 'trigger'), edges: graph.edges.slice(1) };
        },
      });
      await expectRejected(
        () => apps.client.post(triggerPath(workflow.triggerUuid, 'test'), BODY, { key: main.org.adminKey }),
        404,
        'trigger_not_found',
      );
      const production = await apps.client.post(triggerPath(workflow.triggerUuid), BODY, { key: main.org.adminKey });
      expect(production.status).toBe(200);
    });

    it('answers 404 when neither definition exists any more (all archived)', async () => {
      const workflow = await seedWorkflow(apps.dataSource, main.org.organizationId, { published: (uuid) => agentGraph(uuid) });
      await apps.dataSource.getRepository(WorkflowDefinition).update({ workflowId: workflow.workflowId }, { status: 'archived' });
      await expectRejected(
        () => apps.client.post(triggerPath(workflow.triggerUuid, 'test'), BODY, { key: main.org.adminKey }),
        404,
        'agent_not_published',
      );
    });

    it.each([2147483647, 999999])('answers 404 for the unknown telephony_configuration_id %d', async (id) => {
      await expectRejected(
        () =>
          apps.client.post(
            triggerPath(main.workflow.triggerUuid),
            { ...BODY, telephony_configuration_id: id },
            { key: main.org.adminKey },
          ),
        404,
        'telephony_configuration_not_found',
      );
    });

    it.each(['production', 'test'] as const)(
      'answers 404 for a telephony_configuration_id of another organization (%s URL)',
      async (environment) => {
        await expectRejected(
          () =>
            apps.client.post(
              triggerPath(main.workflow.triggerUuid, environment),
              { ...BODY, telephony_configuration_id: other.config.id },
              { key: main.org.adminKey },
            ),
          404,
          'telephony_configuration_not_found',
        );
      },
    );
  });

  describe('400 telephony_not_configured', () => {
    it('answers 400 when the organization has no telephony configuration at all', async () => {
      const org = await createOrganization(apps.dataSource, 'No telephony');
      const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
      await expectRejected(
        () => apps.client.post(triggerPath(workflow.triggerUuid), BODY, { key: org.adminKey }),
        400,
        'telephony_not_configured',
        [org.organizationId],
      );
    });

    it('answers 400 when no configuration is the default, and 200 when one is named explicitly', async () => {
      const org = await createOrganization(apps.dataSource, 'No default');
      const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId, { isDefaultOutbound: false });
      const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
      await expectRejected(
        () => apps.client.post(triggerPath(workflow.triggerUuid, 'test'), BODY, { key: org.adminKey }),
        400,
        'telephony_not_configured',
        [org.organizationId],
      );
      const explicit = await apps.client.post(
        triggerPath(workflow.triggerUuid),
        { ...BODY, telephony_configuration_id: config.id },
        { key: org.adminKey },
      );
      expect(explicit.status).toBe(200);
    });

    it('answers 400 when the default configuration has no from number', async () => {
      const org = await createOrganization(apps.dataSource, 'No from number');
      await seedSandboxConfiguration(apps.dataSource, org.organizationId, { fromNumbers: [] });
      const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
      await expectRejected(
        () => apps.client.post(triggerPath(workflow.triggerUuid), BODY, { key: org.adminKey }),
        400,
        'telephony_not_configured',
        [org.organizationId],
      );
    });

    it('answers 400 when the configuration named by telephony_configuration_id has no from number', async () => {
      const config = await seedSandboxConfiguration(apps.dataSource, main.org.organizationId, {
        name: 'Empty line',
        isDefaultOutbound: false,
        fromNumbers: [],
      });
      await expectRejected(
        () =>
          apps.client.post(
            triggerPath(main.workflow.triggerUuid),
            { ...BODY, telephony_configuration_id: config.id },
            { key: main.org.adminKey },
          ),
        400,
        'telephony_not_configured',
      );
      await apps.dataSource.getRepository(TelephonyConfiguration).delete({ id: config.id });
    });
  });

  describe('error body', () => {
    it('answers every error as {statusCode, code, message, request_id} with request_id equal to the X-Request-Id header', async () => {
      const responses = await Promise.all([
        apps.client.post(triggerPath(main.workflow.triggerUuid), BODY),
        apps.client.post(triggerPath(main.workflow.triggerUuid), BODY, { key: other.org.adminKey }),
        apps.client.post(triggerPath(randomUUID()), BODY, { key: main.org.adminKey }),
        apps.client.post(triggerPath(main.workflow.triggerUuid), { phone_number: 'nope' }, { key: main.org.adminKey }),
      ]);
      expectError(responses[0], 401, 'unauthorized');
      expectError(responses[1], 403, 'forbidden');
      expectError(responses[2], 404, 'trigger_not_found');
      expectError(responses[3], 400, 'validation_failed');
      expect(new Set(responses.map((response) => response.body.request_id)).size).toBe(responses.length);
    });

    it('echoes a well-formed X-Request-Id the client sent, in the header and the body', async () => {
      const requestId = `client-${randomUUID()}`;
      const response = await apps.client.post(triggerPath(randomUUID()), BODY, {
        key: main.org.adminKey,
        headers: { 'x-request-id': requestId },
      });
      expectError(response, 404, 'trigger_not_found');
      expect(response.body.request_id).toBe(requestId);
    });

    it('replaces a malformed X-Request-Id with one of its own', async () => {
      const response = await apps.client.post(triggerPath(randomUUID()), BODY, {
        key: main.org.adminKey,
        headers: { 'x-request-id': 'bad id with spaces' },
      });
      expectError(response, 404, 'trigger_not_found');
      expect(response.body.request_id).not.toBe('bad id with spaces');
    });

    it('sends the X-Request-Id header on successful answers too', async () => {
      const response = await apps.client.post(triggerPath(main.workflow.triggerUuid), BODY, { key: main.org.adminKey });
      expect(response.status).toBe(200);
      expect(response.headers.get('x-request-id')).toEqual(expect.any(String));
    });
  });
});
