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
    const named: string[] = [];
    for (const [path, methods] of Object.entries<Record<string, { operationId?: string }>>(response.body.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        named.push(`${operation.operationId} ${method.toUpperCase()} ${path}`);
        if (operation.operationId) operations[operation.operationId] = `${method.toUpperCase()} ${path}`;
      }
    }
    // Every operation has an id of its own (OpenAPI's rule; generated clients name their methods by it).
    expect(named.filter((entry) => entry.startsWith('undefined '))).toEqual([]);
    expect(named).toHaveLength(Object.keys(operations).length);
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

  it('documents the management lists as pages read with limit and cursor, the workflow list of summaries without graphs', async () => {
    const { body: doc } = await apps.client.get('/docs-json');
    const schemas = doc.components.schemas;
    for (const [path, page, field, item] of [
      ['/api/v1/workflows', 'WorkflowPage', 'workflows', 'WorkflowSummaryView'],
      ['/api/v1/api-keys', 'ApiKeyPage', 'api_keys', 'ApiKeyView'],
      ['/api/v1/telephony-configurations', 'TelephonyConfigurationPage', 'telephony_configurations', 'TelephonyConfigurationView'],
    ]) {
      const list = doc.paths[path].get;
      expect({ path, page: list.responses['200'].content['application/json'].schema.$ref }).toEqual({ path, page: `#/components/schemas/${page}` });
      expect(list.parameters.filter((parameter: { in: string }) => parameter.in === 'query').map(({ name }: { name: string }) => name).sort()).toEqual([
        'cursor',
        'limit',
      ]);
      expect(schemas[page].properties[field].items.$ref).toBe(`#/components/schemas/${item}`);
      expect(schemas[page].properties.next_cursor).toMatchObject({ type: 'string', nullable: true });
    }
    expect(schemas.WorkflowSummaryView.properties.draft_definition.allOf ?? [schemas.WorkflowSummaryView.properties.draft_definition]).toEqual([
      expect.objectContaining({ $ref: '#/components/schemas/DefinitionVersionView' }),
    ]);
    expect(Object.keys(schemas.DefinitionVersionView.properties).sort()).toEqual(['id', 'status', 'version']);
    expect(schemas.WorkflowView.properties.draft_definition.allOf ?? [schemas.WorkflowView.properties.draft_definition]).toEqual([
      expect.objectContaining({ $ref: '#/components/schemas/WorkflowDefinitionView' }),
    ]);
    expect(schemas.WorkflowDefinitionView.properties.definition).toBeDefined();
  });

  it('documents ids as integers: in the trigger answer, in run records, and in every path', async () => {
    const { body: doc } = await apps.client.get('/docs-json');
    const schemas = doc.components.schemas;
    expect(schemas.TriggerCallResponseDto.properties.workflow_run_id.type).toBe('integer');
    expect(schemas.TriggerCallResponseDto.properties.status.enum).toEqual(['initiated']);
    for (const field of ['id', 'workflow_id', 'definition_id', 'telephony_configuration_id']) {
      expect({ field, type: schemas.RunView.properties[field]?.type ?? schemas.RunSummary.properties[field].type }).toEqual({ field, type: 'integer' });
    }
    for (const [view, field] of [['WorkflowView', 'id'], ['ApiKeyView', 'id'], ['TelephonyConfigurationView', 'id']]) {
      expect({ view, type: schemas[view].properties[field].type }).toEqual({ view, type: 'integer' });
    }
    expect(schemas.ApiKeyView.properties.workflow_ids).toMatchObject({ type: 'array', items: { type: 'integer' } });
    // Every path parameter named as an id is an integer, the documented ones included.
    const idParams: Array<[string, string, string]> = [];
    for (const [path, methods] of Object.entries<Record<string, { parameters?: Array<{ in: string; name: string; schema: { type: string } }> }>>(
      doc.paths,
    )) {
      for (const [method, operation] of Object.entries(methods)) {
        const pathNames = (operation.parameters ?? []).filter((parameter) => parameter.in === 'path').map(({ name }) => name);
        expect({ operation: `${method} ${path}`, pathNames }).toEqual({ operation: `${method} ${path}`, pathNames: [...new Set(pathNames)] });
        for (const parameter of operation.parameters ?? []) {
          if (parameter.in === 'path' && /(^|_)id$/.test(parameter.name)) idParams.push([`${method} ${path}`, parameter.name, parameter.schema.type]);
        }
      }
    }
    expect(idParams.map(([operation, name]) => `${operation} ${name}`)).toEqual(
      expect.arrayContaining(['get /api/v1/workflow/{workflow_id}/runs/{run_id} run_id', 'get /api/v1/workflows/{id} id']),
    );
    expect(idParams.filter(([, , type]) => type !== 'integer')).toEqual([]);
    // An id that is not a number answers 400 validation_failed (ParseIdPipe), on every operation that takes one.
    const withIds = [...new Set(idParams.map(([operation]) => operation))];
    const answersOf = (operation: string) => {
      const [method, path] = operation.split(' ');
      return Object.keys(doc.paths[path][method].responses);
    };
    expect(withIds.filter((operation) => !answersOf(operation).includes('400'))).toEqual([]);
  });

  it('documents the errors of the trigger endpoints and of a run read, each with the one error body', async () => {
    const { body: doc } = await apps.client.get('/docs-json');
    const body = doc.components.schemas.ErrorBodyView;
    expect(body.required).toEqual(expect.arrayContaining(['statusCode', 'code', 'message', 'request_id']));
    const errorRef = { content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBodyView' } } } };
    for (const path of ['/api/v1/public/agent/{uuid}', '/api/v1/public/agent/test/{uuid}']) {
      const responses = doc.paths[path].post.responses;
      for (const status of ['400', '401', '403', '404', '409', '413', '414', '415', '422', '503']) {
        expect({ path, status, answer: responses[status] }).toMatchObject({ path, status, answer: errorRef });
      }
      expect(responses['400'].description).toContain('invalid_json');
      expect(responses['503'].description).toContain('Retry-After');
      expect(doc.paths[path].post.description).toContain('will be dialed once');
      // A replay is told apart by a header, and a key may come as a Bearer token too.
      expect(Object.keys(responses['200'].headers)).toEqual(['Idempotent-Replayed']);
      expect(doc.paths[path].post.security).toEqual(expect.arrayContaining([{ 'api-key': [] }, { bearer: [] }]));
    }
    for (const operation of [
      doc.paths['/api/v1/workflows'].post,
      doc.paths['/api/v1/api-keys'].post,
      doc.paths['/api/v1/telephony-configurations'].post,
      doc.paths['/api/v1/triggers/{uuid}'].patch,
    ]) {
      expect({ operation: operation.operationId, answer: operation.responses['400'] }).toMatchObject({ operation: operation.operationId, answer: errorRef });
    }
    const downloads = doc.paths['/api/v1/downloads/{payload}/{signature}'].get.responses;
    for (const status of ['412', '503']) expect({ status, answer: downloads[status] }).toMatchObject({ status, answer: errorRef });
    expect(doc.components.schemas.CreateTelephonyConfigurationDto.properties.provider.enum).toEqual(['sandbox', 'twilio', 'telnyx', 'vonage', 'plivo']);
    const read = doc.paths['/api/v1/workflow/{workflow_id}/runs/{run_id}'].get.responses;
    for (const status of ['400', '401', '403', '404', '503']) expect({ status, answer: read[status] }).toMatchObject({ status, answer: errorRef });
    expect(doc.components.schemas.RunSummary.properties.recording_url.description).toContain('expires');
  });

  it('never documents a credentials field in a telephony configuration response', async () => {
    const response = await apps.client.get('/docs-json');
    const view = response.body.components.schemas.TelephonyConfigurationView;
    expect(Object.keys(view.properties)).toContain('has_credentials');
    expect(Object.keys(view.properties)).not.toContain('credentials');
  });
});
