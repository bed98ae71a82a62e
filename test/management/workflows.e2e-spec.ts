import { randomUUID } from 'node:crypto';
import { ApiTrigger, Workflow, WorkflowDefinition } from '@app/persistence';
import { createOrganization, TestOrganization } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { createWorkflow, expectError, graph, issueKey } from './management-helpers';

describe('management API: workflows', () => {
  let apps: TestApps;
  let org: TestOrganization;
  let other: TestOrganization;

  beforeAll(async () => {
    apps = await startTestApps({ dialer: false });
    org = await createOrganization(apps.dataSource);
    other = await createOrganization(apps.dataSource, 'Other org');
  });
  afterAll(() => apps.close());

  const definitionsOf = (workflowId: number) =>
    apps.dataSource.getRepository(WorkflowDefinition).find({ where: { workflowId }, order: { version: 'ASC' } });

  it('creates a workflow with its definition as draft version 1 and registers a server-assigned trigger', async () => {
    const response = await apps.client.post(
      '/api/v1/workflows',
      { name: 'Reminder', definition: graph({ trigger: null }) },
      { key: org.adminKey },
    );
    expect(response.status).toBe(201);
    const body = response.body;
    expect(body).toEqual({
      id: expect.any(Number),
      name: 'Reminder',
      draft_definition: { id: expect.any(Number), version: 1, status: 'draft', definition: expect.any(Object) },
      published_definition: null,
      triggers: [{ uuid: expect.stringMatching(/^[0-9a-f-]{36}$/), is_active: true }],
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const triggerNode = body.draft_definition.definition.nodes.find((node: { type: string }) => node.type === 'trigger');
    expect(triggerNode.data.trigger_path).toBe(body.triggers[0].uuid);
    expect(body.draft_definition.definition.edges).toEqual(graph({ trigger: null }).edges);

    const trigger = await apps.dataSource.getRepository(ApiTrigger).findOneByOrFail({ uuid: body.triggers[0].uuid });
    expect(trigger).toMatchObject({ organizationId: org.organizationId, workflowId: body.id, isActive: true });
  });

  it('answers 400, and stores nothing, for text Postgres cannot store (NUL, unpaired surrogates): validation_failed for the name, invalid_definition for the definition', async () => {
    const before = await apps.dataSource.getRepository(Workflow).countBy({ organizationId: org.organizationId });
    const nul = await apps.client.post('/api/v1/workflows', { name: 'a\u0000b', definition: graph({ trigger: null }) }, { key: org.adminKey });
    expectError(nul, 400, 'validation_failed');
    // In the definition: named where it is, as any other problem of the definition.
    const surrogate = await apps.client.post(
      '/api/v1/workflows',
      { name: 'Agent', definition: graph({ trigger: null, prompt: 'half a pair: \ud800' }) },
      { key: org.adminKey },
    );
    expectError(surrogate, 400, 'invalid_definition');
    expect(surrogate.body.message).toMatch(/definition\.nodes\[\d+\]\.data\.prompt must not contain NUL characters or unpaired UTF-16 surrogates/);
    const nulInData = graph({ trigger: null });
    nulInData.nodes[0].data.note = { 'a\u0000b': 1 };
    const nulKey = await apps.client.post('/api/v1/workflows', { name: 'Agent', definition: nulInData }, { key: org.adminKey });
    expectError(nulKey, 400, 'invalid_definition');
    expect(nulKey.body.message).toContain('a key of definition.nodes[0].data.note must not contain NUL characters');
    // In a name (plain text) the driver would store U+FFFD in its place without a word: refused as well.
    const loneName = await apps.client.post('/api/v1/workflows', { name: 'Agent \udc00', definition: graph({ trigger: null }) }, { key: org.adminKey });
    expectError(loneName, 400, 'validation_failed');
    expect(loneName.body.details).toEqual([expect.objectContaining({ field: 'name' })]);
    expect(await apps.dataSource.getRepository(Workflow).countBy({ organizationId: org.organizationId })).toBe(before);
    const emoji = await apps.client.post('/api/v1/workflows', { name: 'Agent 😀', definition: graph({ trigger: null }) }, { key: org.adminKey });
    expect(emoji.status).toBe(201);
    expect(emoji.body.name).toBe('Agent 😀');
  });

  it('answers 400 invalid_definition, and stores nothing, for a number in node data the JSON parser could not read as written', async () => {
    const before = await apps.dataSource.getRepository(Workflow).countBy({ organizationId: org.organizationId });
    for (const number of ['1e400', '12345678901234567890']) {
      const text = JSON.stringify({ name: 'Agent', definition: graph({ trigger: null }) }).replace('"data":{}', `"data":{"limit":${number}}`);
      const response = await apps.client.post('/api/v1/workflows', undefined, { key: org.adminKey, raw: text });
      expectError(response, 400, 'invalid_definition');
      expect(response.body.message).toContain('definition.nodes[0].data.limit is a number JSON does not carry exactly');
    }
    expect(await apps.dataSource.getRepository(Workflow).countBy({ organizationId: org.organizationId })).toBe(before);
  });

  it('keeps the trigger_path of a trigger node saved again without one, so the agent stays at its URL once published', async () => {
    const created = await createWorkflow(apps, org, graph({ trigger: null }));
    const [path] = created.triggers.map((trigger: { uuid: string }) => trigger.uuid);
    const pathIn = (view: { draft_definition: { definition: { nodes: Array<{ type: string; data: { trigger_path?: string } }> } } }) =>
      view.draft_definition.definition.nodes.find((node) => node.type === 'trigger')?.data.trigger_path;

    const again = await apps.client.put(`/api/v1/workflows/${created.id}/draft`, { definition: graph({ trigger: null, prompt: 'v2' }) }, { key: org.adminKey });
    expect(again.status).toBe(200);
    expect(pathIn(again.body)).toBe(path);
    await apps.client.post(`/api/v1/workflows/${created.id}/publish`, undefined, { key: org.adminKey });
    // After publishing the draft slot is empty: the published definition's path is kept.
    const third = await apps.client.put(`/api/v1/workflows/${created.id}/draft`, { definition: graph({ trigger: null, prompt: 'v3' }) }, { key: org.adminKey });
    expect(pathIn(third.body)).toBe(path);
    expect(third.body.triggers).toEqual([{ uuid: path, is_active: true }]);

    // A path the definition gives still wins.
    const given = randomUUID();
    const moved = await apps.client.put(`/api/v1/workflows/${created.id}/draft`, { definition: graph({ trigger: given }) }, { key: org.adminKey });
    expect(pathIn(moved.body)).toBe(given);
  });

  it('keeps the published path of a trigger node saved again without one, though a draft between left the node out', async () => {
    const created = await createWorkflow(apps, org, graph({ trigger: null }));
    const [path] = created.triggers.map((trigger: { uuid: string }) => trigger.uuid);
    expect((await apps.client.post(`/api/v1/workflows/${created.id}/publish`, undefined, { key: org.adminKey })).status).toBe(200);
    const save = (definition: Record<string, any>) => apps.client.put(`/api/v1/workflows/${created.id}/draft`, { definition }, { key: org.adminKey });
    // A draft without the trigger node, then the definition as first written (the node without a path) again.
    expect((await save(graph({ prompt: 'no trigger for now' }))).status).toBe(200);
    const again = await save(graph({ trigger: null, prompt: 'back' }));
    expect(again.status).toBe(200);
    expect(again.body.draft_definition.definition.nodes.find((node: { type: string }) => node.type === 'trigger').data.trigger_path).toBe(path);
    expect((await apps.client.post(`/api/v1/workflows/${created.id}/publish`, undefined, { key: org.adminKey })).status).toBe(200);
    const [active] = (await apps.client.get(`/api/v1/workflows/${created.id}`, { key: org.adminKey })).body.triggers;
    expect(active).toEqual({ uuid: path, is_active: true });
  });

  it('publishes the draft version the caller reviewed only while it is still the draft (409 draft_changed otherwise, nothing published)', async () => {
    const created = await createWorkflow(apps, org, graph({ prompt: 'reviewed' }));
    const reviewed = created.draft_definition.version;
    const publish = (body?: Record<string, unknown>) => apps.client.post(`/api/v1/workflows/${created.id}/publish`, body, { key: org.adminKey });
    // Someone else saves a half-finished draft between the review and the publish.
    const meanwhile = await apps.client.put(`/api/v1/workflows/${created.id}/draft`, { definition: graph({ prompt: 'half-finished' }) }, { key: org.adminKey });
    expect(meanwhile.body.draft_definition.version).toBeGreaterThan(reviewed);

    const refused = await publish({ version: reviewed });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ statusCode: 409, code: 'draft_changed' });
    expect(refused.body.message).toContain(`not ${reviewed}`);
    const unchanged = (await apps.client.get(`/api/v1/workflows/${created.id}`, { key: org.adminKey })).body;
    expect(unchanged.published_definition).toBeNull();
    expect(unchanged.draft_definition.version).toBe(meanwhile.body.draft_definition.version);

    const published = await publish({ version: meanwhile.body.draft_definition.version });
    expect(published.status).toBe(200);
    expect(published.body.published_definition.version).toBe(meanwhile.body.draft_definition.version);
    // Without a version, as before: whatever draft is there.
    await apps.client.put(`/api/v1/workflows/${created.id}/draft`, { definition: graph({ prompt: 'next' }) }, { key: org.adminKey });
    expect((await publish()).status).toBe(200);
    for (const bad of [{ version: 0 }, { version: '3' }, { version: 1.5 }, { other: 1 }]) {
      const invalid = await publish(bad);
      expect({ bad, status: invalid.status, code: invalid.body.code }).toEqual({ bad, status: 400, code: 'validation_failed' });
    }
  });

  it('keeps a trigger_path the definition gives, lower-cased', async () => {
    const uuid = randomUUID();
    const body = await createWorkflow(apps, org, graph({ trigger: uuid.toUpperCase() }));
    expect(body.triggers).toEqual([{ uuid, is_active: true }]);
    expect(body.draft_definition.definition.nodes[0].data.trigger_path).toBe(uuid);
  });

  it('answers one workflow in the same shape it was created in', async () => {
    const created = await createWorkflow(apps, org);
    const response = await apps.client.get(`/api/v1/workflows/${created.id}`, { key: org.adminKey });
    expect(response.status).toBe(200);
    expect(response.body).toEqual(created);
  });

  /** A workflow as the list shows it: its definitions' versions, not their graphs. */
  const summary = ({ draft_definition, published_definition, ...rest }: any) => ({
    ...rest,
    draft_definition: draft_definition && { id: draft_definition.id, version: draft_definition.version, status: draft_definition.status },
    published_definition: published_definition && {
      id: published_definition.id,
      version: published_definition.version,
      status: published_definition.status,
    },
  });

  it('lists the organization’s workflows newest first, without other organizations’ ones nor the definitions’ graphs', async () => {
    const fresh = await createOrganization(apps.dataSource);
    const first = await createWorkflow(apps, fresh);
    const published = await apps.client.post(`/api/v1/workflows/${first.id}/publish`, undefined, { key: fresh.adminKey });
    expect(published.status).toBe(200);
    const second = await createWorkflow(apps, fresh);
    await createWorkflow(apps, other);
    const response = await apps.client.get('/api/v1/workflows', { key: fresh.adminKey });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ workflows: [summary(second), summary(published.body)], next_cursor: null });
    expect(response.body.workflows[1]).toMatchObject({ draft_definition: null, published_definition: { version: 1, status: 'published' } });
  });

  it('pages the list with limit and cursor, stable while workflows are added', async () => {
    const fresh = await createOrganization(apps.dataSource);
    const created = [];
    for (let i = 0; i < 5; i += 1) created.push(await createWorkflow(apps, fresh));
    const newestFirst = [...created].reverse().map(summary);

    const first = await apps.client.get('/api/v1/workflows?limit=2', { key: fresh.adminKey });
    expect(first.status).toBe(200);
    expect(first.body.workflows).toEqual(newestFirst.slice(0, 2));
    expect(first.body.next_cursor).toEqual(expect.any(String));
    // A workflow added meanwhile goes to the head of the list, not into the next page.
    await createWorkflow(apps, fresh);
    const second = await apps.client.get(`/api/v1/workflows?limit=2&cursor=${first.body.next_cursor}`, { key: fresh.adminKey });
    expect(second.body.workflows).toEqual(newestFirst.slice(2, 4));
    const last = await apps.client.get(`/api/v1/workflows?limit=2&cursor=${second.body.next_cursor}`, { key: fresh.adminKey });
    expect(last.body).toEqual({ workflows: newestFirst.slice(4), next_cursor: null });

    // Another organization's key gets its own workflows past that cursor, never these.
    const theirs = await apps.client.get(`/api/v1/workflows?cursor=${first.body.next_cursor}`, { key: other.adminKey });
    expect(theirs.status).toBe(200);
    const ours = new Set(created.map((workflow) => workflow.id));
    expect(theirs.body.workflows.filter((workflow: { id: number }) => ours.has(workflow.id))).toEqual([]);
  });

  it('answers 50 workflows a page unless asked, up to 200, and no cursor after a last page that is exactly full', async () => {
    const fresh = await createOrganization(apps.dataSource);
    const ids: number[] = [];
    for (let i = 0; i < 51; i += 1) ids.push((await createWorkflow(apps, fresh)).id);
    const newestFirst = ids.reverse();

    const byDefault = await apps.client.get('/api/v1/workflows', { key: fresh.adminKey });
    expect(byDefault.body.workflows.map((workflow: { id: number }) => workflow.id)).toEqual(newestFirst.slice(0, 50));
    expect(byDefault.body.next_cursor).toEqual(expect.any(String));
    const rest = await apps.client.get(`/api/v1/workflows?cursor=${byDefault.body.next_cursor}`, { key: fresh.adminKey });
    expect(rest.body.workflows.map((workflow: { id: number }) => workflow.id)).toEqual(newestFirst.slice(50));
    expect(rest.body.next_cursor).toBeNull();

    const all = await apps.client.get('/api/v1/workflows?limit=200', { key: fresh.adminKey });
    expect(all.body.workflows).toHaveLength(51);
    expect(all.body.next_cursor).toBeNull();
    const exactlyFull = await apps.client.get('/api/v1/workflows?limit=51', { key: fresh.adminKey });
    expect(exactlyFull.body.workflows).toHaveLength(51);
    expect(exactlyFull.body.next_cursor).toBeNull();
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=201', 'limit'],
    ['limit=ten', 'limit'],
    ['cursor=%21%21', 'cursor'],
    [`cursor=${Buffer.from('0').toString('base64url')}`, 'cursor'],
    [`cursor=${Buffer.from('2147483648').toString('base64url')}`, 'cursor'],
    ['status=queued', 'status'],
  ])('refuses a list query with %s: 400 validation_failed', async (query, named) => {
    const response = await apps.client.get(`/api/v1/workflows?${query}`, { key: org.adminKey });
    expectError(response, 400, 'validation_failed');
    expect(JSON.stringify(response.body)).toContain(named);
  });

  it('replaces the draft with the next version and keeps the old draft row, archived', async () => {
    const created = await createWorkflow(apps, org);
    const original = created.draft_definition;
    const replacement = graph({ prompt: 'You are a new assistant.' });
    const response = await apps.client.put(`/api/v1/workflows/${created.id}/draft`, { definition: replacement }, { key: org.adminKey });
    expect(response.status).toBe(200);
    expect(response.body.draft_definition).toEqual({ id: expect.any(Number), version: 2, status: 'draft', definition: replacement });
    expect(response.body.draft_definition.id).not.toBe(original.id);
    expect(response.body.published_definition).toBeNull();

    const rows = await definitionsOf(created.id);
    expect(rows.map((row) => [row.id, row.version, row.status])).toEqual([
      [original.id, 1, 'archived'],
      [response.body.draft_definition.id, 2, 'draft'],
    ]);
    expect(rows[0].definition).toEqual(original.definition);
  });

  it('gives concurrent draft saves one version each and leaves exactly one draft', async () => {
    const created = await createWorkflow(apps, org);
    const responses = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        apps.client.put(`/api/v1/workflows/${created.id}/draft`, { definition: graph({ prompt: `v${i}` }) }, { key: org.adminKey }),
      ),
    );
    expect(responses.map((response) => response.status)).toEqual([200, 200, 200, 200, 200]);
    const rows = await definitionsOf(created.id);
    expect(rows.map((row) => row.version)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(rows.filter((row) => row.status === 'draft').map((row) => row.version)).toEqual([6]);
  });

  it('creates a draft next to the published definition after publishing', async () => {
    const created = await createWorkflow(apps, org);
    await apps.client.post(`/api/v1/workflows/${created.id}/publish`, undefined, { key: org.adminKey });
    const response = await apps.client.put(`/api/v1/workflows/${created.id}/draft`, { definition: graph() }, { key: org.adminKey });
    expect(response.status).toBe(200);
    expect(response.body.published_definition).toMatchObject({ id: created.draft_definition.id, version: 1, status: 'published' });
    expect(response.body.draft_definition).toMatchObject({ version: 2, status: 'draft' });
  });

  it('keeps triggers registered when a later definition drops their node, listing those of the current definitions only', async () => {
    const created = await createWorkflow(apps, org);
    const [path] = created.triggers.map((trigger: { uuid: string }) => trigger.uuid);
    const save = (definition: Record<string, any>) => apps.client.put(`/api/v1/workflows/${created.id}/draft`, { definition }, { key: org.adminKey });
    // Dropped from the only definition: not listed (its URLs run nothing), but still the workflow's, so no other takes it.
    const dropped = await save(graph());
    expect(dropped.status).toBe(200);
    expect(dropped.body.triggers).toEqual([]);
    const other = await apps.client.post('/api/v1/workflows', { name: 'taker', definition: graph({ trigger: path }) }, { key: org.adminKey });
    expect({ status: other.status, code: other.body.code }).toEqual({ status: 409, code: 'trigger_conflict' });
    // Back in the draft, listed again.
    expect((await save(graph({ trigger: path }))).body.triggers).toEqual([{ uuid: path, is_active: true }]);
  });

  it('lists the triggers of the draft and the published definition, not every path ever saved', async () => {
    const first = randomUUID();
    const created = await createWorkflow(apps, org, graph({ trigger: first }));
    expect((await apps.client.post(`/api/v1/workflows/${created.id}/publish`, undefined, { key: org.adminKey })).status).toBe(200);
    // A client that gives the trigger node a new path on each save: fifty paths registered.
    let last = first;
    for (let save = 0; save < 50; save++) {
      last = randomUUID();
      const saved = await apps.client.put(`/api/v1/workflows/${created.id}/draft`, { definition: graph({ trigger: last }) }, { key: org.adminKey });
      expect(saved.status).toBe(200);
    }
    const expected = [
      { uuid: first, is_active: true },
      { uuid: last, is_active: true },
    ];
    expect((await apps.client.get(`/api/v1/workflows/${created.id}`, { key: org.adminKey })).body.triggers).toEqual(expected);
    const listed = await apps.client.get('/api/v1/workflows', { key: org.adminKey });
    expect(listed.body.workflows.find((workflow: { id: number }) => workflow.id === created.id).triggers).toEqual(expected);
    expect(await apps.dataSource.getRepository(ApiTrigger).countBy({ workflowId: created.id })).toBe(51);
  });

  it('publishes the draft: the same row becomes published and the draft slot empties', async () => {
    const created = await createWorkflow(apps, org);
    const response = await apps.client.post(`/api/v1/workflows/${created.id}/publish`, undefined, { key: org.adminKey });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      id: created.id,
      draft_definition: null,
      published_definition: { ...created.draft_definition, status: 'published' },
    });
    const [row] = await definitionsOf(created.id);
    expect(row.publishedAt).toBeInstanceOf(Date);
  });

  it('archives the old published definition when a new draft is published', async () => {
    const created = await createWorkflow(apps, org);
    await apps.client.post(`/api/v1/workflows/${created.id}/publish`, undefined, { key: org.adminKey });
    const draft = await apps.client.put(`/api/v1/workflows/${created.id}/draft`, { definition: graph({ prompt: 'v2' }) }, { key: org.adminKey });
    const response = await apps.client.post(`/api/v1/workflows/${created.id}/publish`, undefined, { key: org.adminKey });
    expect(response.status).toBe(200);
    expect(response.body.published_definition).toMatchObject({ id: draft.body.draft_definition.id, version: 2, status: 'published' });
    expect(response.body.draft_definition).toBeNull();
    const rows = await definitionsOf(created.id);
    expect(rows.map((row) => [row.id, row.status])).toEqual([
      [created.draft_definition.id, 'archived'],
      [draft.body.draft_definition.id, 'published'],
    ]);
  });

  it('answers 409 no_draft when there is no draft to publish, and changes nothing', async () => {
    const created = await createWorkflow(apps, org);
    await apps.client.post(`/api/v1/workflows/${created.id}/publish`, undefined, { key: org.adminKey });
    const before = await definitionsOf(created.id);
    expectError(await apps.client.post(`/api/v1/workflows/${created.id}/publish`, undefined, { key: org.adminKey }), 409, 'no_draft');
    expect(await definitionsOf(created.id)).toEqual(before);
  });

  it('answers 409 trigger_conflict when a new workflow reuses another workflow’s trigger_path, and stores nothing', async () => {
    const owner = await createWorkflow(apps, org);
    const taken = owner.triggers[0].uuid;
    const before = await apps.dataSource.getRepository(Workflow).countBy({ organizationId: org.organizationId });
    const response = await apps.client.post('/api/v1/workflows', { name: 'Thief', definition: graph({ trigger: taken }) }, { key: org.adminKey });
    expectError(response, 409, 'trigger_conflict');
    expect(response.body.message).toContain(taken);
    expect(await apps.dataSource.getRepository(Workflow).countBy({ organizationId: org.organizationId })).toBe(before);
    const trigger = await apps.dataSource.getRepository(ApiTrigger).findOneByOrFail({ uuid: taken });
    expect(trigger.workflowId).toBe(owner.id);
  });

  it('answers 409 trigger_conflict when a draft reuses another organization’s trigger_path, and keeps the draft', async () => {
    const foreign = await createWorkflow(apps, other);
    const mine = await createWorkflow(apps, org);
    const response = await apps.client.put(
      `/api/v1/workflows/${mine.id}/draft`,
      { definition: graph({ trigger: foreign.triggers[0].uuid }) },
      { key: org.adminKey },
    );
    expectError(response, 409, 'trigger_conflict');
    const rows = await definitionsOf(mine.id);
    expect(rows.map((row) => [row.id, row.status])).toEqual([[mine.draft_definition.id, 'draft']]);
  });

  it('accepts the workflow’s own trigger_path again in a later draft', async () => {
    const created = await createWorkflow(apps, org);
    const uuid = created.triggers[0].uuid;
    const response = await apps.client.put(`/api/v1/workflows/${created.id}/draft`, { definition: graph({ trigger: uuid }) }, { key: org.adminKey });
    expect(response.status).toBe(200);
    expect(response.body.triggers).toEqual([{ uuid, is_active: true }]);
  });

  const node = (id: string, type: string, data: Record<string, unknown> = {}) => ({ id, type, data });
  const start = node('start', 'startCall', { prompt: 'Hi' });
  it.each([
    ['nodes is missing', { edges: [] }, '"nodes" must be an array'],
    ['edges is missing', { nodes: [start] }, '"edges" must be an array'],
    ['there is an unknown top-level field', { nodes: [start], edges: [], viewport: {} }, 'unknown field(s) viewport'],
    ['a node id is repeated', { nodes: [start, node('start', 'endCall')], edges: [] }, 'node id "start" is used more than once'],
    ['a node id is empty', { nodes: [start, node(' ', 'endCall')], edges: [] }, 'nodes[1].id must be a non-empty string'],
    ['a node type is unknown', { nodes: [start, node('x', 'dance')], edges: [] }, 'has type "dance"'],
    ['a node has no data', { nodes: [start, { id: 'end', type: 'endCall' }], edges: [] }, 'data must be an object'],
    ['a node has an unknown field', { nodes: [{ ...start, position: { x: 1 } }], edges: [] }, 'unknown field(s) position'],
    ['an edge refers to a missing node', { nodes: [start], edges: [{ source: 'start', target: 'nowhere' }] }, 'refers to node "nowhere"'],
    ['an edge is not an object', { nodes: [start], edges: ['start->end'] }, 'edges[0] must be an object'],
    ['there is no startCall', { nodes: [node('end', 'endCall')], edges: [] }, 'exactly one startCall node, not 0'],
    ['there are two startCalls', { nodes: [start, node('start2', 'startCall', { prompt: 'x' })], edges: [] }, 'exactly one startCall node, not 2'],
    ['a startCall has no prompt', { nodes: [node('start', 'startCall')], edges: [] }, 'needs a string data.prompt'],
    ['an agentNode prompt is not a string', { nodes: [start, node('a', 'agentNode', { prompt: 42 })], edges: [] }, 'needs a string data.prompt'],
    ['a greeting is not a string', { nodes: [node('start', 'startCall', { prompt: 'x', greeting: ['hi'] })], edges: [] }, 'data.greeting must be a string'],
    ['a prompt uses an unknown filter', { nodes: [node('start', 'startCall', { prompt: '{{ initial_context.a | exec }}' })], edges: [] }, 'data.prompt is not a valid template'],
    ['a where_exp expression uses an unknown filter', {
      nodes: [node('start', 'startCall', { prompt: 'x', greeting: '{{ initial_context.items | where_exp: "i", "i.vip | truthy" | size }}' })],
      edges: [],
    }, 'data.greeting is not a valid template: the expression given to where_exp ("i.vip | truthy") does not parse: undefined filter: truthy'],
    ['a greeting does not parse', { nodes: [node('start', 'startCall', { prompt: 'x', greeting: '{% if %}' })], edges: [] }, 'data.greeting is not a valid template'],
    ['a trigger_path is not a UUID', { nodes: [start, node('t', 'trigger', { trigger_path: 'abc' })], edges: [] }, 'trigger_path must be a UUID'],
    ['two trigger nodes share a path', {
      nodes: [start, node('t1', 'trigger', { trigger_path: '2f1c8a4e-0000-4000-8000-000000000001' }), node('t2', 'trigger', { trigger_path: '2f1c8a4e-0000-4000-8000-000000000001' })],
      edges: [],
    }, 'used by more than one trigger node'],
    ['there are more than 200 nodes', { nodes: [start, ...Array.from({ length: 200 }, (_, i) => node(`e${i}`, 'endCall'))], edges: [] }, 'it has 201 nodes; the limit is 200'],
    ['it is over 256 KiB of JSON', { nodes: [node('start', 'startCall', { prompt: 'x'.repeat(270 * 1024) })], edges: [] }, 'the limit is 262144'],
    ['a template holds more than 500 Liquid tags', { nodes: [node('start', 'startCall', { prompt: '{{a}}'.repeat(501) })], edges: [] }, 'it holds 501 Liquid tags and outputs; the limit is 500'],
    ['its templates hold more than 2,000 Liquid tags together', {
      nodes: [start, ...Array.from({ length: 5 }, (_, i) => node(`a${i}`, 'agentNode', { prompt: '{{a}}'.repeat(401) }))],
      edges: [],
    }, 'its templates hold 2005 Liquid tags and outputs together; the limit is 2000'],
    ['its templates take more than a quarter of a call\'s second to render together', {
      // Each loop well within a template's own limits; together they would hold every process rendering them.
      nodes: [start, ...Array.from({ length: 3 }, (_, i) => node(`a${i}`, 'agentNode', { prompt: '{% for i in (1..1000) %}{% for j in (1..1000) %}{% endfor %}{% endfor %}' }))],
      edges: [],
    }, 'too costly to render: rendering its templates takes more than 250 ms'],
    ['its templates render to more than 2,000,000 characters together', {
      nodes: [start, ...Array.from({ length: 5 }, (_, i) => node(`a${i}`, 'agentNode', { prompt: `{% for i in (1..50) %}${'x'.repeat(10_000)}{% endfor %}` }))],
      edges: [],
    }, 'too costly to render: its templates render to more than 2000000 characters together'],
    ['one template renders to more than 1,000,000 characters', {
      nodes: [node('start', 'startCall', { prompt: `{% for i in (1..101) %}${'x'.repeat(10_000)}{% endfor %}` })],
      edges: [],
    }, 'too costly to render: a template renders to more than 1000000 characters'],
    ['a template uses {% liquid %}, whose tags no delimiter counts', {
      nodes: [node('start', 'startCall', { prompt: `{% liquid\n${'echo "a"\n'.repeat(50)}%}` })],
      edges: [],
    }, '{% liquid %} is not available'],
  ])('answers 400 invalid_definition when %s, and stores nothing', async (_, definition, problem) => {
    const fresh = await createOrganization(apps.dataSource);
    const response = await apps.client.post('/api/v1/workflows', { name: 'Bad', definition }, { key: fresh.adminKey });
    expectError(response, 400, 'invalid_definition');
    expect(response.body.message).toContain(problem);
    expect(await apps.dataSource.getRepository(Workflow).countBy({ organizationId: fresh.organizationId })).toBe(0);
    expect(await apps.dataSource.getRepository(ApiTrigger).countBy({ organizationId: fresh.organizationId })).toBe(0);
  });

  it('answers 400 invalid_definition for a bad draft and keeps the current draft', async () => {
    const created = await createWorkflow(apps, org);
    const response = await apps.client.put(
      `/api/v1/workflows/${created.id}/draft`,
      { definition: { nodes: [{ id: 'x', type: 'endCall', data: {} }], edges: [] } },
      { key: org.adminKey },
    );
    expectError(response, 400, 'invalid_definition');
    expect((await definitionsOf(created.id)).map((row) => [row.id, row.status])).toEqual([[created.draft_definition.id, 'draft']]);
  });

  it.each([
    ['a missing name', { definition: graph() }],
    ['a blank name', { name: ' ', definition: graph() }],
    ['a missing definition', { name: 'x' }],
    ['a definition that is an array', { name: 'x', definition: [] }],
    ['an unknown field', { name: 'x', definition: graph(), published: true }],
  ])('answers 400 validation_failed for %s', async (_, body) => {
    expectError(await apps.client.post('/api/v1/workflows', body, { key: org.adminKey }), 400, 'validation_failed');
  });

  it('answers 400 validation_failed for a draft body with an unknown field', async () => {
    const created = await createWorkflow(apps, org);
    const response = await apps.client.put(`/api/v1/workflows/${created.id}/draft`, { definition: graph(), name: 'x' }, { key: org.adminKey });
    expectError(response, 400, 'validation_failed');
  });

  describe('another organization’s workflow', () => {
    let foreign: any;
    beforeAll(async () => {
      foreign = await createWorkflow(apps, other);
    });

    it('returns 404 when reading a workflow that belongs to another organization', async () => {
      expectError(await apps.client.get(`/api/v1/workflows/${foreign.id}`, { key: org.adminKey }), 404, 'workflow_not_found');
    });

    it('returns 404 when saving a draft of a workflow that belongs to another organization, and changes nothing', async () => {
      const response = await apps.client.put(`/api/v1/workflows/${foreign.id}/draft`, { definition: graph() }, { key: org.adminKey });
      expectError(response, 404, 'workflow_not_found');
      expect((await definitionsOf(foreign.id)).map((row) => [row.id, row.status])).toEqual([[foreign.draft_definition.id, 'draft']]);
    });

    it("answers 404, not the definition's own problems, for another organization's workflow: its definition is not even read", async () => {
      const broken = { nodes: [{ id: 's', type: 'startCall', data: { prompt: '{{ unclosed' } }], edges: [] };
      expectError(await apps.client.put(`/api/v1/workflows/${foreign.id}/draft`, { definition: broken }, { key: org.adminKey }), 404, 'workflow_not_found');
      expectError(await apps.client.put('/api/v1/workflows/2147483647/draft', { definition: broken }, { key: org.adminKey }), 404, 'workflow_not_found');
    });

    it('returns 404 when publishing a workflow that belongs to another organization, and changes nothing', async () => {
      expectError(await apps.client.post(`/api/v1/workflows/${foreign.id}/publish`, undefined, { key: org.adminKey }), 404, 'workflow_not_found');
      expect((await definitionsOf(foreign.id)).map((row) => row.status)).toEqual(['draft']);
    });
  });

  it.each([
    ['GET', '/api/v1/workflows/abc'],
    ['PUT', '/api/v1/workflows/1.5/draft'],
    ['POST', '/api/v1/workflows/-1/publish'],
  ])('answers 400 for a malformed id: %s %s', async (method, path) => {
    const body = method === 'PUT' ? { definition: graph() } : undefined;
    expectError(await apps.client.request(method, path, body, { key: org.adminKey }), 400, 'validation_failed');
  });

  it.each([
    ['GET', '/api/v1/workflows/99999999999'],
    ['PUT', '/api/v1/workflows/99999999999/draft'],
    ['POST', '/api/v1/workflows/2147483648/publish'],
  ])('answers 404 for an id beyond the id range: %s %s', async (method, path) => {
    const body = method === 'PUT' ? { definition: graph() } : undefined;
    expectError(await apps.client.request(method, path, body, { key: org.adminKey }), 404, 'workflow_not_found');
  });

  describe.each([
    ['POST', '/api/v1/workflows', { name: 'x', definition: graph() }],
    ['GET', '/api/v1/workflows', undefined],
    ['GET', '/api/v1/workflows/1', undefined],
    ['PUT', '/api/v1/workflows/1/draft', { definition: graph() }],
    ['POST', '/api/v1/workflows/1/publish', undefined],
  ])('%s %s', (method, path, body) => {
    it('answers 401 without a key', async () => {
      expectError(await apps.client.request(method, path, body, {}), 401, 'unauthorized');
    });

    it('answers 403 with a trigger key', async () => {
      const { key } = await issueKey(apps, org, 'trigger');
      expectError(await apps.client.request(method, path, body, { key }), 403, 'forbidden');
    });
  });
});
