import { randomUUID } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { ApiKey, ApiTrigger, Organization, TelephonyConfiguration, Workflow, WorkflowDefinition } from '@app/persistence';
import { issueApiKey } from '../../auth/api-key-secret';
import { demoAgentGraph } from './demo-agent-graph';

/** Every process that seeds must use the same id (distinct from the migration lock). */
const DEMO_SEED_LOCK_ID = 727_011_002;

export interface DemoSeed {
  organization_id: number;
  /** An admin key, shown once. */
  api_key: string;
  workflow_id: number;
  trigger_uuid: string;
  telephony_configuration_id: number;
}

/**
 * Seeds a demo organization (admin key, sandbox carrier, published agent with an
 * API trigger) into a database that has no organization yet; returns null
 * otherwise. All or nothing, and two concurrent callers seed at most once.
 */
export async function seedDemo(dataSource: DataSource): Promise<DemoSeed | null> {
  return dataSource.transaction(async (manager) => {
    await manager.query('SELECT pg_advisory_xact_lock($1)', [DEMO_SEED_LOCK_ID]);
    if ((await manager.getRepository(Organization).count()) > 0) return null;

    const organization = await manager.getRepository(Organization).save({ name: 'Demo organization' });
    const apiKey = await createAdminKey(manager, organization.id);
    const configuration = await manager.getRepository(TelephonyConfiguration).save({
      organizationId: organization.id,
      name: 'Sandbox',
      provider: 'sandbox',
      credentialsEncrypted: null,
      fromNumbers: ['+15005550006'],
      isDefaultOutbound: true,
      callsPerSecond: 10,
      maxConcurrentCalls: 10,
      maxCallDurationSeconds: 3600,
      settings: { ring_ms: 1000, talk_ms: 4000 },
    });

    const triggerUuid = randomUUID();
    const workflow = await manager.getRepository(Workflow).save({ organizationId: organization.id, name: 'Demo agent' });
    await manager.getRepository(WorkflowDefinition).save({
      workflowId: workflow.id,
      version: 1,
      status: 'published',
      definition: demoAgentGraph(triggerUuid),
      publishedAt: new Date(),
    });
    await manager
      .getRepository(ApiTrigger)
      .save({ uuid: triggerUuid, organizationId: organization.id, workflowId: workflow.id, isActive: true });

    return {
      organization_id: organization.id,
      api_key: apiKey,
      workflow_id: workflow.id,
      trigger_uuid: triggerUuid,
      telephony_configuration_id: configuration.id,
    };
  });
}

/** The same key row `bootstrapOrganization` writes, inside this transaction. */
async function createAdminKey(manager: EntityManager, organizationId: number): Promise<string> {
  const issued = issueApiKey();
  await manager.getRepository(ApiKey).save({
    organizationId,
    name: 'demo admin key',
    role: 'admin',
    keyHash: issued.hash,
    keyPrefix: issued.displayPrefix,
    workflowIds: null,
    revokedAt: null,
  });
  return issued.key;
}
