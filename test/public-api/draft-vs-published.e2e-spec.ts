import { DataSource } from 'typeorm';
import { WorkflowDefinition } from '@app/persistence';
import { agentGraph, createOrganization, seedSandboxConfiguration, seedWorkflow, SeededWorkflow, TestOrganization } from '../support/fixtures';
import { startCall, waitForRun } from '../support/public-api-helpers';
import { startTestApps, TestApps } from '../support/test-apps';

const PHONE = '+14155552671';
const PUBLISHED_GREETING = 'Published version speaking.';
const DRAFT_GREETING = 'Draft version speaking.';

/** Publishes the draft as the management API does: the old published version is archived. */
async function publishDraft(dataSource: DataSource, workflowId: number): Promise<void> {
  await dataSource.transaction(async (manager) => {
    const definitions = manager.getRepository(WorkflowDefinition);
    await definitions.update({ workflowId, status: 'published' }, { status: 'archived' });
    await definitions.update({ workflowId, status: 'draft' }, { status: 'published', publishedAt: new Date() });
  });
}

type Call = { run: any; opening: string };

describe('draft versus published definitions', () => {
  let apps: TestApps;
  let org: TestOrganization;
  /** Each scenario runs in full from beforeAll, all at once so their calls overlap; the tests check what they saw. */
  const scenarios = {} as {
    beforePublishing: Promise<{ workflow: SeededWorkflow; test: Call; production: Call }>;
    afterPublishing: Promise<{ workflow: SeededWorkflow; test: Call; production: Call }>;
    noDraft: Promise<{ workflow: SeededWorkflow; test: Call }>;
    neverPublished: Promise<{ workflow: SeededWorkflow; test: Call }>;
    newDraftAfterPublishing: Promise<{ workflow: SeededWorkflow; newDraftId: number; test: Call; production: Call }>;
  };

  beforeAll(async () => {
    apps = await startTestApps();
    org = await createOrganization(apps.dataSource, 'Draft vs published');
    await seedSandboxConfiguration(apps.dataSource, org.organizationId);

    scenarios.beforePublishing = (async () => {
      const workflow = await seedBoth();
      const [test, production] = await Promise.all([callOn(workflow, 'test'), callOn(workflow, 'production')]);
      return { workflow, test, production };
    })();
    scenarios.afterPublishing = (async () => {
      const workflow = await seedBoth();
      await publishDraft(apps.dataSource, workflow.workflowId);
      const [test, production] = await Promise.all([callOn(workflow, 'test'), callOn(workflow, 'production')]);
      return { workflow, test, production };
    })();
    scenarios.noDraft = (async () => {
      const workflow = await seedWorkflow(apps.dataSource, org.organizationId, {
        published: (uuid) => agentGraph(uuid, { greeting: PUBLISHED_GREETING }),
      });
      return { workflow, test: await callOn(workflow, 'test') };
    })();
    scenarios.neverPublished = (async () => {
      const workflow = await seedWorkflow(apps.dataSource, org.organizationId, {
        draft: (uuid) => agentGraph(uuid, { greeting: DRAFT_GREETING }),
      });
      return { workflow, test: await callOn(workflow, 'test') };
    })();
    scenarios.newDraftAfterPublishing = (async () => {
      const workflow = await seedBoth();
      await publishDraft(apps.dataSource, workflow.workflowId);
      const newDraft = await apps.dataSource.getRepository(WorkflowDefinition).save({
        workflowId: workflow.workflowId,
        version: 3,
        status: 'draft',
        definition: agentGraph(workflow.triggerUuid, { greeting: 'Second draft speaking.' }),
        publishedAt: null,
      });
      const [test, production] = await Promise.all([callOn(workflow, 'test'), callOn(workflow, 'production')]);
      return { workflow, newDraftId: newDraft.id, test, production };
    })();
    // Each test awaits its own scenario; this only keeps an early failure from being reported as unhandled.
    for (const scenario of Object.values(scenarios)) scenario.catch(() => undefined);
  });
  afterAll(() => apps.close());

  /** Places a call on one URL and answers the completed run and the agent's first words. */
  async function callOn(workflow: SeededWorkflow, environment: 'production' | 'test'): Promise<Call> {
    const runId = await startCall(apps.client, workflow.triggerUuid, { phone_number: PHONE }, { key: org.adminKey, environment });
    const run = await waitForRun(apps.client, org.adminKey, workflow.workflowId, runId);
    const transcript = await apps.client.get(run.transcript_url);
    return { run, opening: transcript.body.turns[0].text as string };
  }

  function seedBoth() {
    return seedWorkflow(apps.dataSource, org.organizationId, {
      published: (uuid) => agentGraph(uuid, { greeting: PUBLISHED_GREETING }),
      draft: (uuid) => agentGraph(uuid, { greeting: DRAFT_GREETING }),
    });
  }

  it('before publishing, the test URL runs the draft and the production URL the published version', async () => {
    const { workflow, test, production } = await scenarios.beforePublishing;
    expect(test.run).toEqual(expect.objectContaining({ environment: 'test', definition_id: workflow.draftId }));
    expect(test.opening).toBe(DRAFT_GREETING);
    expect(production.run).toEqual(expect.objectContaining({ environment: 'production', definition_id: workflow.publishedId }));
    expect(production.opening).toBe(PUBLISHED_GREETING);
  });

  it('after publishing the draft, both URLs run the same, newly published definition', async () => {
    const { workflow, test, production } = await scenarios.afterPublishing;
    expect(test.run.definition_id).toBe(workflow.draftId);
    expect(production.run.definition_id).toBe(workflow.draftId);
    expect([test.opening, production.opening]).toEqual([DRAFT_GREETING, DRAFT_GREETING]);
  });

  it('the test URL runs the published version when the workflow has no draft', async () => {
    const { workflow, test } = await scenarios.noDraft;
    expect(test.run).toEqual(expect.objectContaining({ environment: 'test', definition_id: workflow.publishedId }));
    expect(test.opening).toBe(PUBLISHED_GREETING);
  });

  it('the test URL runs a draft when nothing was ever published', async () => {
    const { workflow, test } = await scenarios.neverPublished;
    expect(test.run.definition_id).toBe(workflow.draftId);
    expect(test.opening).toBe(DRAFT_GREETING);
  });

  it('a new draft saved after publishing changes the test URL only', async () => {
    const { workflow, newDraftId, test, production } = await scenarios.newDraftAfterPublishing;
    expect(test.run.definition_id).toBe(newDraftId);
    expect(test.opening).toBe('Second draft speaking.');
    expect(production.run.definition_id).toBe(workflow.draftId);
    expect(production.opening).toBe(DRAFT_GREETING);
  });
});
