import {
  CallableOrganization,
  countRuns,
  expectError,
  issueKey,
  runPath,
  seedCallableOrganization,
  startCall,
  triggerPath,
  waitForRun,
} from '../support/public-api-helpers';
import { startTestApps, TestApps } from '../support/test-apps';

const PHONE = '+14155552671';

describe('cross-organization isolation on every public endpoint', () => {
  let apps: TestApps;
  let alpha: CallableOrganization;
  let beta: CallableOrganization;
  let alphaRun: any;
  /** Keys of beta that try to reach alpha: its admin key, an unrestricted trigger key, and one whose allow-list names alpha's workflow. */
  let intruders: Array<{ name: string; key: string; allows: (workflowId: number) => boolean }>;

  beforeAll(async () => {
    apps = await startTestApps();
    [alpha, beta] = await Promise.all([
      seedCallableOrganization(apps.dataSource, { name: 'Alpha' }),
      seedCallableOrganization(apps.dataSource, { name: 'Beta' }),
    ]);
    const runId = await startCall(apps.client, alpha.workflow.triggerUuid, { phone_number: PHONE }, { key: alpha.org.adminKey });
    alphaRun = await waitForRun(apps.client, alpha.org.adminKey, alpha.workflow.workflowId, runId);
    const unrestricted = await issueKey(apps.dataSource, beta.org.organizationId, { workflowIds: null });
    const forged = await issueKey(apps.dataSource, beta.org.organizationId, { workflowIds: [alpha.workflow.workflowId] });
    intruders = [
      { name: 'admin key', key: beta.org.adminKey, allows: () => true },
      { name: 'unrestricted trigger key', key: unrestricted.key, allows: () => true },
      {
        name: 'trigger key allowed for the other organization’s workflow id',
        key: forged.key,
        allows: (workflowId) => workflowId === alpha.workflow.workflowId,
      },
    ];
  });
  afterAll(() => apps.close());

  async function runCounts() {
    return Promise.all([countRuns(apps.dataSource, alpha.org.organizationId), countRuns(apps.dataSource, beta.org.organizationId)]);
  }

  it.each(['production', 'test'] as const)(
    'trigger (%s URL): another organization’s keys answer 403 and start nothing',
    async (environment) => {
      const before = await runCounts();
      for (const { name, key } of intruders) {
        for (const bearer of [false, true]) {
          const response = await apps.client.post(triggerPath(alpha.workflow.triggerUuid, environment), { phone_number: PHONE }, { key, bearer });
          expect({ name, bearer, status: response.status }).toEqual({ name, bearer, status: 403 });
          expectError(response, 403, 'forbidden');
        }
      }
      expect(await runCounts()).toEqual(before);
    },
  );

  it.each(['production', 'test'] as const)(
    'trigger (%s URL): the other organization’s telephony configuration answers 404 and starts nothing',
    async (environment) => {
      const before = await runCounts();
      const response = await apps.client.post(
        triggerPath(beta.workflow.triggerUuid, environment),
        { phone_number: PHONE, telephony_configuration_id: alpha.config.id },
        { key: beta.org.adminKey },
      );
      expectError(response, 404, 'telephony_configuration_not_found');
      expect(await runCounts()).toEqual(before);
    },
  );

  it('run record: another organization’s keys answer 404, under its workflow id or their own', async () => {
    for (const { name, key, allows } of intruders) {
      for (const workflowId of [alpha.workflow.workflowId, beta.workflow.workflowId]) {
        const response = await apps.client.get(runPath(workflowId, alphaRun.id), { key });
        // A key whose allow-list leaves out its own organization's workflow is refused that workflow before any run
        // is read: 403, which says nothing of alpha.
        const [status, code] = allows(workflowId) ? [404, 'run_not_found'] : [403, 'forbidden'];
        expect({ name, workflowId, status: response.status }).toEqual({ name, workflowId, status });
        expectError(response, status, code);
      }
    }
  });

  it('run list: another organization’s keys answer 404, as for a workflow that does not exist, and see no run', async () => {
    for (const { name, key } of intruders) {
      const response = await apps.client.get(`/api/v1/workflow/${alpha.workflow.workflowId}/runs`, { key });
      expect({ name, status: response.status }).toEqual({ name, status: 404 });
      expectError(response, 404, 'workflow_not_found');
    }
  });

  it('downloads: another organization’s keys cannot mint links for the other organization’s runs', async () => {
    for (const { name, key } of intruders) {
      for (const artifact of ['recording', 'transcript']) {
        const response = await apps.client.post(`${runPath(alpha.workflow.workflowId, alphaRun.id)}/downloads`, { artifact }, { key });
        expect({ name, artifact, status: response.status }).toEqual({ name, artifact, status: 404 });
        expectError(response, 404, 'run_not_found');
      }
    }
  });

  it('the owning organization still reads, lists and downloads its run', async () => {
    const key = { key: alpha.org.adminKey };
    expect((await apps.client.get(runPath(alpha.workflow.workflowId, alphaRun.id), key)).status).toBe(200);
    const list = await apps.client.get(`/api/v1/workflow/${alpha.workflow.workflowId}/runs`, key);
    expect(list.body.runs.map((run: any) => run.id)).toEqual([alphaRun.id]);
    const link = await apps.client.post(`${runPath(alpha.workflow.workflowId, alphaRun.id)}/downloads`, { artifact: 'recording' }, key);
    expect(link.status).toBe(200);
    expect((await fetch(link.body.url)).status).toBe(200);
  });

  it('a run of one organization never appears when the other organization lists that workflow', async () => {
    const betaRunId = await startCall(apps.client, beta.workflow.triggerUuid, { phone_number: '+14155550001' }, { key: beta.org.adminKey });
    const alphaList = await apps.client.get(`/api/v1/workflow/${beta.workflow.workflowId}/runs`, { key: alpha.org.adminKey });
    expect(JSON.stringify(alphaList.body)).not.toContain(`"id":${betaRunId}`);
    expectError(alphaList, 404, 'workflow_not_found');
  });
});
