import { Workflow } from '@app/persistence';
import { createOrganization, TestOrganization } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { createWorkflow, expectError } from './management-helpers';

/** Keys that name members of Object.prototype (or that Nest strips as prototype-pollution keys), none of them `__proto__`. */
const OBJECT_MEMBER_KEYS = ['constructor', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf', 'toLocaleString', 'prototype'];

/** One startCall node whose data holds every key of OBJECT_MEMBER_KEYS, with a string value each. */
function dataWithMemberKeys(): Record<string, string> {
  return Object.fromEntries([['prompt', 'hi'], ...OBJECT_MEMBER_KEYS.map((key) => [key, `${key} value`])]);
}

/**
 * An object's keys and values, in key order: jsonb keeps its own key order, and
 * jest's equality takes an own `constructor` key for the object's class.
 */
function entriesOf(value: object): Array<[string, unknown]> {
  return Object.entries(value).sort(([a], [b]) => a.localeCompare(b));
}

/** A minimal valid definition, as JSON text (a literal `constructor` key would not survive an object spread). */
function definitionJson(extra: { graph?: string; node?: string; edge?: string; data?: string } = {}): string {
  const data = `{"prompt":"hi"${extra.data ?? ''}}`;
  return (
    `{"nodes":[{"id":"s","type":"startCall","data":${data}${extra.node ?? ''}},{"id":"e","type":"endCall","data":{}}],` +
    `"edges":[{"source":"s","target":"e"${extra.edge ?? ''}}]${extra.graph ?? ''}}`
  );
}

describe('workflow definitions: keys named like Object.prototype members', () => {
  let apps: TestApps;
  let org: TestOrganization;

  beforeAll(async () => {
    apps = await startTestApps({ dialer: false });
    org = await createOrganization(apps.dataSource);
  });
  afterAll(() => apps.close());

  const workflowCount = () => apps.dataSource.getRepository(Workflow).countBy({ organizationId: org.organizationId });
  const create = (definition: string) =>
    apps.client.post('/api/v1/workflows', undefined, { key: org.adminKey, raw: `{"name":"w","definition":${definition}}` });
  const storedDefinition = async (id: number) => {
    const [row] = await apps.dataSource.query(`SELECT definition FROM workflow_definitions WHERE id = $1`, [id]);
    return row.definition;
  };

  it('stores node data holding constructor, toString, hasOwnProperty ... keys as sent', async () => {
    const data = dataWithMemberKeys();
    const response = await create(definitionJson({ data: `,${JSON.stringify(data).slice(1, -1)}` }));
    expect(response.status).toBe(201);
    expect(entriesOf(response.body.draft_definition.definition.nodes[0].data)).toEqual(entriesOf(data));
    const stored = await storedDefinition(response.body.draft_definition.id);
    expect(entriesOf(stored.nodes[0].data)).toEqual(entriesOf(data));
  });

  it('refuses the top-level toString of a definition, and keeps the constructor and toString of its node data', async () => {
    const before = await workflowCount();
    const refused = await create('{"nodes":[{"id":"s","type":"startCall","data":{"prompt":"hi","constructor":"x","toString":"y"}}],"edges":[],"toString":1}');
    expectError(refused, 400, 'invalid_definition');
    expect(refused.body.message).toContain('unknown field(s) toString');
    expect(await workflowCount()).toBe(before);

    const kept = await create('{"nodes":[{"id":"s","type":"startCall","data":{"prompt":"hi","constructor":"x","toString":"y"}}],"edges":[]}');
    expect(kept.status).toBe(201);
    const stored = await storedDefinition(kept.body.draft_definition.id);
    expect(entriesOf(stored.nodes[0].data)).toEqual(entriesOf({ prompt: 'hi', constructor: 'x', toString: 'y' }));
  });

  it.each(OBJECT_MEMBER_KEYS)('answers 400 invalid_definition, and stores nothing, for the unknown top-level definition key %s', async (key) => {
    const before = await workflowCount();
    const response = await create(definitionJson({ graph: `,"${key}":1` }));
    expectError(response, 400, 'invalid_definition');
    expect(response.body.message).toContain(`the definition has unknown field(s) ${key}`);
    expect(await workflowCount()).toBe(before);
  });

  it.each(OBJECT_MEMBER_KEYS)('answers 400 invalid_definition for the unknown node key %s', async (key) => {
    const response = await create(definitionJson({ node: `,"${key}":"x"` }));
    expectError(response, 400, 'invalid_definition');
    expect(response.body.message).toContain(`nodes[0] has unknown field(s) ${key}`);
  });

  it.each(OBJECT_MEMBER_KEYS)('answers 400 invalid_definition for the unknown edge key %s', async (key) => {
    const response = await create(definitionJson({ edge: `,"${key}":"x"` }));
    expectError(response, 400, 'invalid_definition');
    expect(response.body.message).toContain(`edges[0] has unknown field(s) ${key}`);
  });

  it('judges a saved draft alike: node data kept as sent, an unknown top-level key refused', async () => {
    const created = await createWorkflow(apps, org);
    const path = `/api/v1/workflows/${created.id}/draft`;
    const refused = await apps.client.put(path, undefined, { key: org.adminKey, raw: `{"definition":${definitionJson({ graph: ',"valueOf":1' })}}` });
    expectError(refused, 400, 'invalid_definition');
    expect(refused.body.message).toContain('unknown field(s) valueOf');

    const saved = await apps.client.put(path, undefined, {
      key: org.adminKey,
      raw: `{"definition":${definitionJson({ data: ',"constructor":"c","hasOwnProperty":"h"' })}}`,
    });
    expect(saved.status).toBe(200);
    const stored = await storedDefinition(saved.body.draft_definition.id);
    expect(entriesOf(stored.nodes[0].data)).toEqual(entriesOf({ prompt: 'hi', constructor: 'c', hasOwnProperty: 'h' }));
  });

  it('still refuses a __proto__ key, or a constructor object holding a prototype key, in a definition as invalid_json', async () => {
    expectError(await create(definitionJson({ data: ',"__proto__":{"x":1}' })), 400, 'invalid_json');
    expectError(await create(definitionJson({ data: ',"constructor":{"prototype":{"x":1}}' })), 400, 'invalid_json');
  });

  it.each([
    ['missing', '{"name":"w"}'],
    ['null', '{"name":"w","definition":null}'],
    ['an array', '{"name":"w","definition":[]}'],
    ['a string', '{"name":"w","definition":"{}"}'],
  ])('answers 400 validation_failed, naming definition, for a definition that is %s', async (_, raw) => {
    const response = await apps.client.post('/api/v1/workflows', undefined, { key: org.adminKey, raw });
    expectError(response, 400, 'validation_failed');
    expect(response.body.details).toEqual([{ field: 'definition', message: 'definition must be a JSON object' }]);
  });

  it('lists problems of the name and of the definition together', async () => {
    const response = await apps.client.post('/api/v1/workflows', undefined, { key: org.adminKey, raw: '{"name":"","definition":[]}' });
    expectError(response, 400, 'validation_failed');
    expect(response.body.details.map((detail: { field: string }) => detail.field).sort()).toEqual(['definition', 'name']);
  });
});
