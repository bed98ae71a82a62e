import { ConcurrencyLimiter, RedisClient } from '@app/queue';
import { CallEventApplier } from '../../apps/dialer/src/call-events/call-event-applier.service';
import { agentGraph, createOrganization, seedSandboxConfiguration, seedWorkflow } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';

describe('a concurrency slot after a final carrier event', () => {
  let apps: TestApps;

  beforeAll(async () => {
    apps = await startTestApps();
  });
  afterAll(() => apps.close());

  it('is released by the retry of an event whose move was stored before its job stopped', async () => {
    const org = await createOrganization(apps.dataSource);
    const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 20, talk_ms: 50 } });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
    // The run as the first try of its `completed` event left it: moved and finished, its slot still taken.
    const [{ id: runId }] = await apps.dataSource.query(
      `INSERT INTO workflow_runs (organization_id, workflow_id, name, status, environment, trigger_uuid, telephony_configuration_id,
                                  provider, phone_number, provider_call_id, is_completed, ended_at)
       VALUES ($1, $2, 'WR-API-slot', 'completed', 'production', $3, $4, 'sandbox', '+14155550100', 'SB-slot', true, now())
       RETURNING id`,
      [org.organizationId, workflow.workflowId, workflow.triggerUuid, config.id],
    );
    const dialer = apps.dialer!;
    const slots = dialer.get(ConcurrencyLimiter);
    await dialer.get(RedisClient).redis.zadd(slots.key(config.id), Date.now() + 3_600_000, String(runId));
    expect(await slots.inUse(config.id)).toBe(1);

    const moved = await dialer.get(CallEventApplier).apply({
      runId,
      organizationId: org.organizationId,
      provider: 'sandbox',
      providerCallId: 'SB-slot',
      type: 'completed',
      occurredAt: new Date().toISOString(),
    });

    expect(moved).toBe(false);
    expect(await slots.inUse(config.id)).toBe(0);
  });
});
