import { randomUUID } from 'node:crypto';
import { ApiTrigger } from '@app/persistence';
import { createOrganization, TestOrganization } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { createPublishedWorkflow, createSandboxConfiguration, expectError, graph, issueKey } from './management-helpers';

describe('management API: triggers', () => {
  let apps: TestApps;
  let org: TestOrganization;
  let other: TestOrganization;

  beforeAll(async () => {
    apps = await startTestApps({ dialer: false });
    org = await createOrganization(apps.dataSource);
    other = await createOrganization(apps.dataSource, 'Other org');
    await createSandboxConfiguration(apps, org);
  });
  afterAll(() => apps.close());

  const call = (uuid: string) =>
    apps.client.post(`/api/v1/public/agent/${uuid}`, { phone_number: '+14155552671' }, { key: org.adminKey });

  it('deactivating a trigger makes its call URL answer 404, and reactivating it restores it', async () => {
    const { workflowId, triggerUuid } = await createPublishedWorkflow(apps, org);
    expect((await call(triggerUuid)).status).toBe(200);

    const off = await apps.client.patch(`/api/v1/triggers/${triggerUuid}`, { is_active: false }, { key: org.adminKey });
    expect(off.status).toBe(200);
    expect(off.body).toEqual({ uuid: triggerUuid, workflow_id: workflowId, is_active: false });
    expectError(await call(triggerUuid), 404, 'trigger_not_found');

    const on = await apps.client.patch(`/api/v1/triggers/${triggerUuid}`, { is_active: true }, { key: org.adminKey });
    expect(on.body).toEqual({ uuid: triggerUuid, workflow_id: workflowId, is_active: true });
    expect((await call(triggerUuid)).status).toBe(200);
  });

  it('accepts the UUID in upper case', async () => {
    const { triggerUuid } = await createPublishedWorkflow(apps, org);
    const response = await apps.client.patch(`/api/v1/triggers/${triggerUuid.toUpperCase()}`, { is_active: false }, { key: org.adminKey });
    expect(response.status).toBe(200);
    expect(response.body.uuid).toBe(triggerUuid);
  });

  it('shows the deactivation on the workflow and keeps it when a definition with the trigger is saved again', async () => {
    const { workflowId, triggerUuid } = await createPublishedWorkflow(apps, org);
    await apps.client.patch(`/api/v1/triggers/${triggerUuid}`, { is_active: false }, { key: org.adminKey });
    const saved = await apps.client.put(
      `/api/v1/workflows/${workflowId}/draft`,
      { definition: graph({ trigger: triggerUuid }) },
      { key: org.adminKey },
    );
    expect(saved.status).toBe(200);
    expect(saved.body.triggers).toEqual([{ uuid: triggerUuid, is_active: false }]);
  });

  it('returns 404 when the trigger belongs to another organization, and leaves it active', async () => {
    const { triggerUuid } = await createPublishedWorkflow(apps, other);
    const response = await apps.client.patch(`/api/v1/triggers/${triggerUuid}`, { is_active: false }, { key: org.adminKey });
    expectError(response, 404, 'trigger_not_found');
    const trigger = await apps.dataSource.getRepository(ApiTrigger).findOneByOrFail({ uuid: triggerUuid });
    expect(trigger.isActive).toBe(true);
  });

  it.each([
    ['an unknown UUID', randomUUID()],
    ['a path that is not a UUID', 'not-a-uuid'],
  ])('returns 404 trigger_not_found for %s', async (_, uuid) => {
    expectError(await apps.client.patch(`/api/v1/triggers/${uuid}`, { is_active: false }, { key: org.adminKey }), 404, 'trigger_not_found');
  });

  it.each([
    ['a missing is_active', {}],
    ['is_active as a string', { is_active: 'false' }],
    ['is_active as null', { is_active: null }],
    ['an unknown field', { is_active: true, workflow_id: 1 }],
  ])('answers 400 validation_failed for %s, and changes nothing', async (_, body) => {
    const { triggerUuid } = await createPublishedWorkflow(apps, org);
    expectError(await apps.client.patch(`/api/v1/triggers/${triggerUuid}`, body, { key: org.adminKey }), 400, 'validation_failed');
    expect((await apps.dataSource.getRepository(ApiTrigger).findOneByOrFail({ uuid: triggerUuid })).isActive).toBe(true);
  });

  it('answers 401 without a key', async () => {
    expectError(await apps.client.patch(`/api/v1/triggers/${randomUUID()}`, { is_active: false }), 401, 'unauthorized');
  });

  it('answers 403 with a trigger key, and changes nothing', async () => {
    const { triggerUuid } = await createPublishedWorkflow(apps, org);
    const { key } = await issueKey(apps, org, 'trigger');
    expectError(await apps.client.patch(`/api/v1/triggers/${triggerUuid}`, { is_active: false }, { key }), 403, 'forbidden');
    expect((await apps.dataSource.getRepository(ApiTrigger).findOneByOrFail({ uuid: triggerUuid })).isActive).toBe(true);
  });
});
