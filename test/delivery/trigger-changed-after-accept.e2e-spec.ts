import { randomUUID } from 'node:crypto';
import { ConcurrencyLimiter } from '@app/queue';
import { CallPlacer } from '../../apps/dialer/src/calls/call-placer.service';
import { agentGraph, sandboxDialsByRun } from '../support/fixtures';
import { acceptedSandboxRun } from '../support/queued-sandbox-run';
import { startTestAppsWithPausedWorkers, TestApps } from '../support/test-apps';

/**
 * What becomes of runs a trigger accepted (each answered 200) when the
 * trigger changes before they are dialed: deactivated, they are still
 * dialed, once; taken out of the agent's published definition, they end
 * `failed` with `definition_not_found`, nothing dialed, their slot freed.
 * The dial jobs are run attempt by attempt, the workers paused, as BullMQ
 * would run them once their pacing instant came.
 */
describe('runs accepted by a trigger that changes before their dial', () => {
  let apps: TestApps;

  beforeAll(async () => {
    apps = await startTestAppsWithPausedWorkers();
  });
  afterAll(() => apps.close());

  const runOf = async (runId: number) =>
    (await apps.dataSource.query(`SELECT status, end_reason FROM workflow_runs WHERE id = $1`, [runId]))[0] as { status: string; end_reason: string | null };

  it('dials, once, a run its trigger accepted before it was deactivated', async () => {
    const { org, workflow, job } = await acceptedSandboxRun(apps);
    const off = await apps.client.patch(`/api/v1/triggers/${workflow.triggerUuid}`, { is_active: false }, { key: org.adminKey });
    expect(off.status).toBe(200);
    expect((await apps.client.post(`/api/v1/public/agent/${workflow.triggerUuid}`, { phone_number: '+14155550100' }, { key: org.adminKey })).status).toBe(404);

    expect(await apps.dialer!.get(CallPlacer).place(job)).toEqual({ kind: 'done', outcome: 'placed' });
    expect((await sandboxDialsByRun(apps.dataSource, [job.runId])).get(job.runId)).toBe(1);
  });

  it('ends, without a dial, a run whose trigger was taken out of the published definition since, and frees its slot', async () => {
    const { org, configuration, workflow, job } = await acceptedSandboxRun(apps);
    const draft = await apps.client.put(`/api/v1/workflows/${workflow.workflowId}/draft`, { definition: agentGraph(randomUUID()) }, { key: org.adminKey });
    expect(draft.status).toBe(200);
    expect((await apps.client.post(`/api/v1/workflows/${workflow.workflowId}/publish`, {}, { key: org.adminKey })).status).toBe(200);

    expect(await apps.dialer!.get(CallPlacer).place(job)).toEqual({ kind: 'done', outcome: 'failed' });
    expect(await runOf(job.runId)).toEqual({ status: 'failed', end_reason: 'definition_not_found' });
    expect((await sandboxDialsByRun(apps.dataSource, [job.runId])).get(job.runId)).toBe(0);
    expect(await apps.dialer!.get(ConcurrencyLimiter).lease(configuration.id, job.runId)).toBeNull();
  });
});
