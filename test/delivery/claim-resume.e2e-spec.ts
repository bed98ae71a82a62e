import { WorkflowRunStore } from '@app/persistence';
import { RedisClient } from '@app/queue';
import { CallPlacer } from '../../apps/dialer/src/calls/call-placer.service';
import { GroupedRunWrites } from '../../apps/dialer/src/runs/grouped-run-writes.service';
import { agentGraph, createOrganization, sandboxDialsByRun, seedSandboxConfiguration, seedWorkflow } from '../support/fixtures';
import { loseNextAnswer } from '../support/lose-next-answer';
import { startTestAppsWithPausedWorkers, TestApps } from '../support/test-apps';

/**
 * A claim left unsettled (its answer lost, or a write after it failed) is
 * taken up by its job's next attempt. These drive the dialer's `CallPlacer`
 * attempt by attempt, with the workers paused, the way BullMQ would call it.
 */
describe('a dial job taking up its unsettled claim', () => {
  let apps: TestApps;

  beforeAll(async () => {
    apps = await startTestAppsWithPausedWorkers();
  });
  afterAll(() => apps.close());

  /** A run claimed under `claimId` whose job never learnt it (no call yet), as a lost claim answer leaves it. */
  async function claimedRun(claimId: string, callsPerSecond = 10) {
    const org = await createOrganization(apps.dataSource);
    const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 20, talk_ms: 50 }, callsPerSecond });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
    const response = await apps.client.post(`/api/v1/public/agent/${workflow.triggerUuid}`, { phone_number: '+14155550100' }, { key: org.adminKey });
    expect(response.status).toBe(200);
    const runId: number = response.body.workflow_run_id;
    expect(await apps.dialer!.get(GroupedRunWrites).claim(runId, 'dialer.dialing', { fromNumber: '+15005550006' }, { claim: claimId })).not.toBeNull();
    return { job: { runId, organizationId: org.organizationId }, configurationId: config.id };
  }

  const dialsOf = async (runId: number) => (await sandboxDialsByRun(apps.dataSource, [runId])).get(runId);

  it("dials once when the call id cannot be stored after a resumed dial, and the job's retry finds the claim taken up", async () => {
    const { job } = await claimedRun('claim-x');
    const placer = apps.dialer!.get(CallPlacer);
    // Storing this run's call id fails, once (another run's, should a write of one come meanwhile, is stored).
    const writes = apps.dialer!.get(GroupedRunWrites);
    const recordCallId = writes.recordProviderCallId.bind(writes);
    let failed = false;
    const record = jest.spyOn(writes, 'recordProviderCallId').mockImplementation(async (runId, providerCallId) => {
      if (runId !== job.runId || failed) return recordCallId(runId, providerCallId);
      failed = true;
      throw new Error('Connection terminated unexpectedly');
    });
    try {
      // The dial goes out; storing its id fails, so BullMQ retries the job with the data it had: the same claim id.
      await expect(placer.place(job, { unsettledClaim: 'claim-x' })).rejects.toThrow('Connection terminated unexpectedly');
      expect(await dialsOf(job.runId)).toBe(1);

      expect(await placer.place(job, { unsettledClaim: 'claim-x' })).toEqual({ kind: 'done', outcome: 'skipped' });
    } finally {
      record.mockRestore();
    }
    expect(await dialsOf(job.runId)).toBe(1);
    const [run] = await apps.dataSource.query(`SELECT status, provider_call_id FROM workflow_runs WHERE id = $1`, [job.runId]);
    // Left to the call's own status events (paused here), which bring its id.
    expect(run).toEqual({ status: 'dialing', provider_call_id: null });
  });

  it('takes the claim up on the next attempt when the answer to taking it up was lost too, and dials once', async () => {
    const { job } = await claimedRun('claim-y');
    const placer = apps.dialer!.get(CallPlacer);
    const lost = loseNextAnswer(apps.dialer!.get(WorkflowRunStore), 'resumeClaim');
    let second;
    try {
      const first = await placer.place(job, { unsettledClaim: 'claim-y' });
      expect(first).toMatchObject({ kind: 'delay', reason: 'claim_unsettled', progress: { unsettledClaim: 'claim-y', resumingAs: [expect.any(String)] } });
      expect(await dialsOf(job.runId)).toBe(0);
      second = await placer.place(job, first.kind === 'delay' ? first.progress : {});
    } finally {
      lost.mockRestore();
    }
    expect(second).toEqual({ kind: 'done', outcome: 'placed' });
    expect(await dialsOf(job.runId)).toBe(1);
  });

  it('goes out on the rate window and its slot, not behind the pacing backlog its configuration has built since', async () => {
    const { job, configurationId } = await claimedRun('claim-z', 1);
    // At 1 call a second, 600 runs waiting have reserved the instants of the next ten minutes.
    const redis = apps.dialer!.get(RedisClient);
    const [seconds, micros] = await redis.redis.time();
    const nowMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    await redis.redis.set(redis.keyFor('pace', configurationId), String(nowMs + 600_000), 'PX', 700_000);

    const decision = await apps.dialer!.get(CallPlacer).place(job, { unsettledClaim: 'claim-z' });

    expect(decision).toEqual({ kind: 'done', outcome: 'placed' });
    expect(await dialsOf(job.runId)).toBe(1);
  });
});
