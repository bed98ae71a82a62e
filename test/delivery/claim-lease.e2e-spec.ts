import { WorkflowRunStore } from '@app/persistence';
import { CallPlacer } from '../../apps/dialer/src/calls/call-placer.service';
import { GroupedRunWrites } from '../../apps/dialer/src/runs/grouped-run-writes.service';
import { agentGraph, createOrganization, sandboxDialsByRun, seedSandboxConfiguration, seedWorkflow } from '../support/fixtures';
import { startTestAppsWithPausedWorkers, TestApps } from '../support/test-apps';

const LEASE_MS = 300;

/**
 * A dialer stopped or blocked between its claim and its dial (a paused VM,
 * SIGSTOP) sends no dial once its claim is older than DIAL_CLAIM_LEASE_MS:
 * its job's lock may have lapsed meanwhile and the run gone to another
 * dialer. These drive the dialer's `CallPlacer` attempt by attempt, with the
 * workers paused, the way BullMQ would call it; the stop is the claim's
 * answer held back past the lease.
 */
describe("a dial job whose claim outlived its lease", () => {
  let apps: TestApps;

  beforeAll(async () => {
    apps = await startTestAppsWithPausedWorkers({ DIAL_CLAIM_LEASE_MS: String(LEASE_MS) });
  });
  afterAll(() => apps.close());

  async function queuedRun() {
    const org = await createOrganization(apps.dataSource);
    await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 20, talk_ms: 50 } });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
    const response = await apps.client.post(`/api/v1/public/agent/${workflow.triggerUuid}`, { phone_number: '+14155550100' }, { key: org.adminKey });
    expect(response.status).toBe(200);
    return { runId: response.body.workflow_run_id as number, organizationId: org.organizationId };
  }

  /** Holds back the answer of the next claim of `runId` until `meanwhile` has run and the lease has passed. */
  function stopAfterTheClaim(runId: number, meanwhile: () => Promise<void> = async () => undefined) {
    const writes = apps.dialer!.get(GroupedRunWrites);
    const claim = writes.claim.bind(writes);
    const spy = jest.spyOn(writes, 'claim').mockImplementation(async (id, ...rest) => {
      const claimed = await claim(id, ...rest);
      if (id !== runId) return claimed;
      spy.mockRestore();
      await meanwhile();
      await new Promise((resolve) => setTimeout(resolve, LEASE_MS + 200));
      return claimed;
    });
    return spy;
  }

  const dialsOf = async (runId: number) => (await sandboxDialsByRun(apps.dataSource, [runId])).get(runId);
  const statusOf = async (runId: number) => (await apps.dataSource.query(`SELECT status FROM workflow_runs WHERE id = $1`, [runId]))[0].status;

  it('sends no dial on the lapsed claim, and dials once when its job comes back for it', async () => {
    const job = await queuedRun();
    const placer = apps.dialer!.get(CallPlacer);
    const spy = stopAfterTheClaim(job.runId);
    let first;
    try {
      first = await placer.place(job, {});
    } finally {
      spy.mockRestore();
    }
    expect(first).toMatchObject({ kind: 'delay', reason: 'claim_unsettled', progress: { unsettledClaim: expect.any(String) } });
    expect(await dialsOf(job.runId)).toBe(0);
    expect(await statusOf(job.runId)).toBe('dialing');

    // Nobody else took the run meanwhile: the claim is still this job's, taken up again and dialed at once.
    const second = await placer.place(job, first.kind === 'delay' ? first.progress : {});
    expect(second).toEqual({ kind: 'done', outcome: 'placed' });
    expect(await dialsOf(job.runId)).toBe(1);
  });

  it('sends nothing, then or later, when the run was handed to another dialer while this one was stopped', async () => {
    const job = await queuedRun();
    const placer = apps.dialer!.get(CallPlacer);
    // While this dialer is stopped its lock lapses: the reaper finds no call at the carrier, queues the run again,
    // and the job, handed back by BullMQ as stalled, is placed by another dialer.
    const spy = stopAfterTheClaim(job.runId, async () => {
      const requeued = await apps.dialer!.get(WorkflowRunStore).transition(
        job.runId,
        'queued',
        'reaper.requeued',
        {},
        { reason: 'carrier_has_no_call' },
        ['dialing'],
      );
      expect(requeued).not.toBeNull();
      expect(await placer.place(job, {})).toEqual({ kind: 'done', outcome: 'placed' });
    });
    let stopped;
    try {
      stopped = await placer.place(job, {});
    } finally {
      spy.mockRestore();
    }
    expect(stopped).toMatchObject({ kind: 'delay', reason: 'claim_unsettled' });
    expect(await dialsOf(job.runId)).toBe(1);

    // Its job coming back for the claim (had its lock held) finds it another's.
    expect(await placer.place(job, stopped.kind === 'delay' ? stopped.progress : {})).toEqual({ kind: 'done', outcome: 'skipped' });
    expect(await dialsOf(job.runId)).toBe(1);
  });
});
