import { LoopbackHttpFake } from '../fakes/loopback-http-fake';
import { agentGraph, createOrganization, seedWorkflow, SeededWorkflow, TestOrganization } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

/** The number every carrier test dials, and the one it dials from. */
export const CALLEE = '+14155550100';
export const FROM = '+15005550006';

export interface CarrierHarness {
  readonly apps: TestApps;
  readonly org: TestOrganization;
  readonly workflow: SeededWorkflow;
  /** Creates a telephony configuration through the management API (the fake's credentials unless given). */
  createConfiguration(settings: Record<string, unknown>, credentials?: Record<string, unknown>): Promise<number>;
  /** Triggers the workflow through the public API; answers the run id. */
  trigger(configId: number, to?: string): Promise<number>;
  runPath(runId: number): string;
  readRun(runId: number): Promise<any>;
  runReaches(runId: number, done: (run: any) => boolean, what: string): Promise<any>;
}

/**
 * What every carrier's end-to-end test starts from, registered as the
 * describe block's first hooks: the fake started, the apps pointed at it
 * through `apiUrlEnv`, an organization and a published workflow; all
 * stopped afterwards.
 */
export function useCarrierHarness(options: { fake: LoopbackHttpFake; provider: string; name: string; apiUrlEnv: string }): CarrierHarness {
  const { fake, provider, name, apiUrlEnv } = options;
  let apps: TestApps;
  let org: TestOrganization;
  let workflow: SeededWorkflow;

  beforeAll(async () => {
    await fake.start();
    apps = await startTestApps({ env: { [apiUrlEnv]: fake.url } });
    org = await createOrganization(apps.dataSource, `${name} customer`);
    workflow = await seedWorkflow(apps.dataSource, org.organizationId, {
      published: (uuid) => agentGraph(uuid, { greeting: 'Hello {{ initial_context.name }}!' }),
    });
  });
  afterAll(async () => {
    await apps?.close();
    await fake.stop();
  });

  const runPath = (runId: number) => `/api/v1/workflow/${workflow.workflowId}/runs/${runId}`;
  const readRun = async (runId: number) => (await apps.client.get(runPath(runId), { key: org.adminKey })).body;

  return {
    get apps() {
      return apps;
    },
    get org() {
      return org;
    },
    get workflow() {
      return workflow;
    },
    async createConfiguration(settings, credentials = fake.credentials) {
      const response = await apps.client.post(
        '/api/v1/telephony-configurations',
        { name: `${name} ${JSON.stringify(settings)}`, provider, credentials, from_numbers: [FROM], settings },
        { key: org.adminKey },
      );
      if (response.status !== 201) throw new Error(`creating the configuration answered ${response.status}: ${response.text}`);
      return response.body.id;
    },
    async trigger(configId, to = CALLEE) {
      const response = await apps.client.post(
        `/api/v1/public/agent/${workflow.triggerUuid}`,
        { phone_number: to, initial_context: { name: 'Ada' }, telephony_configuration_id: configId },
        { key: org.adminKey },
      );
      if (response.status !== 200) throw new Error(`trigger answered ${response.status}: ${response.text}`);
      return response.body.workflow_run_id;
    },
    runPath,
    readRun,
    runReaches: (runId, done, what) =>
      waitFor(async () => {
        const run = await readRun(runId);
        return done(run) ? run : undefined;
      }, { what, timeoutMs: 12000 }),
  };
}
