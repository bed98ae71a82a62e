import { DefinitionGraph } from '@app/persistence';
import { agentGraph, createOrganization, seedSandboxConfiguration, seedWorkflow, TestOrganization } from '../support/fixtures';
import { startCall, waitForRun } from '../support/public-api-helpers';
import { startTestApps, TestApps } from '../support/test-apps';

const PHONE = '+14155552671';

interface CallCase {
  graph: (uuid: string) => DefinitionGraph;
  context?: Record<string, unknown>;
}

const SYSTEM_LOOKALIKE_CONTEXT = {
  trigger: 'caller-trigger',
  api_key: 'caller-api-key',
  environment: 'caller-env',
  workflow_id: 'caller-workflow',
  telephony_configuration_id: 'caller-config',
  user: { name: 'Ada', tags: ['a', 'b'], address: { city: 'London', zip: null } },
  flags: [true, false, null, 0, -1.5, ''],
  nested: { deeper: { deepest: [{ x: 1 }, []] } },
  empty: {},
  unicode: 'héllo 👋 ✓',
  when: '2024-01-01T00:00:00.000Z',
  numeric_string: '007',
};

const MEMBER_NAMED_CONTEXT = {
  constructor: 'c',
  prototype: { p: 1 },
  toString: 'ts',
  valueOf: 2,
  hasOwnProperty: true,
  user: { constructor: 'nested', toString: 'nested-ts' },
};

const DEFAULTED_GREETING = 'Hi {{ initial_context.user.name | default: "there" }}!';

/** Every call of this file, placed at once in beforeAll so their rings and talks overlap. */
const CASES = {
  nested: {
    graph: (uuid) =>
      agentGraph(uuid, { greeting: 'Hello {{ initial_context.user.name }}, calling about order {{initial_context.order.items[0].sku}}.' }),
    context: { user: { name: 'Ada Lovelace' }, order: { items: [{ sku: 'A-17' }] } },
  },
  defaultMissing: { graph: (uuid) => agentGraph(uuid, { greeting: DEFAULTED_GREETING }), context: { user: {} } },
  defaultPresent: { graph: (uuid) => agentGraph(uuid, { greeting: DEFAULTED_GREETING }), context: { user: { name: 'Grace' } } },
  missing: {
    graph: (uuid) =>
      agentGraph(uuid, {
        greeting: 'Hello {{ initial_context.user.name }}, {{ initial_context.user.title | default: "friend" }}.',
        start: 'Account {{ initial_context.account.id }}.',
        agent: 'Plan {{ initial_context.plan }} for {{ initial_context.user.name }}.',
      }),
    context: { user: { nickname: 'Ada' } },
  },
  noGreeting: { graph: (uuid) => agentGraph(uuid, { start: 'This is {{ initial_context.company }} calling.' }), context: { company: 'Acme' } },
  noContext: { graph: (uuid) => agentGraph(uuid, { greeting: 'Hello {{ initial_context.name }}!' }) },
  inert: {
    graph: (uuid) => agentGraph(uuid, { greeting: 'A{{ initial_context.constructor }}B{{ initial_context.user.name | upcase }}C' }),
    context: { user: { name: 'ada' } },
  },
  systemLookalikes: { graph: (uuid) => agentGraph(uuid), context: SYSTEM_LOOKALIKE_CONTEXT },
  memberNames: {
    graph: (uuid) => agentGraph(uuid, { greeting: '{{ initial_context.toString }}/{{ initial_context.user.constructor }}' }),
    context: MEMBER_NAMED_CONTEXT,
  },
} satisfies Record<string, CallCase>;

type CallResult = { run: any; turns: Array<{ speaker: string; text: string }> };

describe('templates rendered into the transcript, and initial_context kept as sent', () => {
  let apps: TestApps;
  let org: TestOrganization;
  const results = {} as Record<keyof typeof CASES, Promise<CallResult>>;

  beforeAll(async () => {
    apps = await startTestApps();
    org = await createOrganization(apps.dataSource, 'Templates');
    await seedSandboxConfiguration(apps.dataSource, org.organizationId);
    for (const [name, call] of Object.entries(CASES) as Array<[keyof typeof CASES, CallCase]>) {
      results[name] = runCall(call);
      // Each test awaits its own result; this only keeps an early failure from being reported as unhandled.
      results[name].catch(() => undefined);
    }
  });
  afterAll(() => apps.close());

  /** Runs one call; answers the completed run and its transcript. */
  async function runCall({ graph, context }: CallCase): Promise<CallResult> {
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: graph });
    const runId = await startCall(
      apps.client,
      workflow.triggerUuid,
      { phone_number: PHONE, ...(context === undefined ? {} : { initial_context: context }) },
      { key: org.adminKey },
    );
    const run = await waitForRun(apps.client, org.adminKey, workflow.workflowId, runId);
    const transcript = await apps.client.get(run.transcript_url);
    expect(transcript.status).toBe(200);
    return { run, turns: transcript.body.turns };
  }

  it('renders a nested {{ initial_context.user.name }} in the greeting as the agent’s first turn', async () => {
    const { run, turns } = await results.nested;
    expect(turns[0]).toEqual(expect.objectContaining({ speaker: 'agent', text: 'Hello Ada Lovelace, calling about order A-17.' }));
    expect(run.logs.template_missing_paths).toBeUndefined();
  });

  it('uses the default filter’s fallback when the value is missing, and the value when present', async () => {
    expect((await results.defaultMissing).turns[0].text).toBe('Hi there!');
    expect((await results.defaultPresent).turns[0].text).toBe('Hi Grace!');
  });

  it('renders a missing path empty and lists every missing path of every node in logs.template_missing_paths', async () => {
    const { run, turns } = await results.missing;
    expect(turns[0].text).toBe('Hello , friend.');
    expect([...run.logs.template_missing_paths].sort()).toEqual([
      'initial_context.account.id',
      'initial_context.plan',
      'initial_context.user.name',
      'initial_context.user.title',
    ]);
  });

  it('speaks the start node’s rendered prompt first when there is no greeting', async () => {
    const { turns } = await results.noGreeting;
    expect(turns[0]).toEqual(expect.objectContaining({ speaker: 'agent', text: 'This is Acme calling.' }));
  });

  it('renders templates without initial_context as if it were empty, and stores {}', async () => {
    const { run, turns } = await results.noContext;
    expect(turns[0].text).toBe('Hello !');
    expect(run.initial_context).toEqual({});
    expect(run.logs.template_missing_paths).toEqual(['initial_context.name']);
  });

  it('never evaluates code from a template: object members read as nothing, filters still apply', async () => {
    const { turns } = await results.inert;
    expect(turns[0].text).toBe('ABADAC');
  });

  it('stores initial_context exactly as sent, caller keys named like system data included, system data in columns', async () => {
    const { run } = await results.systemLookalikes;
    expect(run.initial_context).toStrictEqual(SYSTEM_LOOKALIKE_CONTEXT);
    const [row] = await apps.dataSource.query(
      `SELECT initial_context, trigger_uuid, environment, api_key_id, telephony_configuration_id FROM workflow_runs WHERE id = $1`,
      [run.id],
    );
    expect(row.initial_context).toStrictEqual(SYSTEM_LOOKALIKE_CONTEXT);
    expect(row).toEqual(
      expect.objectContaining({
        trigger_uuid: run.trigger_uuid,
        environment: 'production',
        api_key_id: expect.any(Number),
        telephony_configuration_id: run.telephony_configuration_id,
      }),
    );
    expect(run.environment).toBe('production');
  });

  it('stores initial_context keys named like object members (constructor, toString, prototype ...) and renders them', async () => {
    const { run, turns } = await results.memberNames;
    expect(run.initial_context).toStrictEqual(MEMBER_NAMED_CONTEXT);
    expect(turns[0].text).toBe('ts/nested');
  });
});
