import { WorkflowRunStore } from '@app/persistence';
import { ConcurrencyLimiter, RedisClient } from '@app/queue';
import { CarrierError, TelephonyProviders } from '@app/telephony';
import { CallPlacer } from '../../apps/dialer/src/calls/call-placer.service';
import { PlaceCallProgress } from '../../apps/dialer/src/calls/place-decision';
import { DialAdmission } from '../../apps/dialer/src/pacing/dial-admission';
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

  it('keeps no id of a take-up Postgres refused, and only the newest 16 of those whose answers were lost, however long writes fail', async () => {
    // A rate no pass of this test reaches: each pass is admitted (on the rate window), then takes the claim up.
    const { job } = await claimedRun('claim-w', 1000);
    const placer = apps.dialer!.get(CallPlacer);
    const store = apps.dialer!.get(WorkflowRunStore);
    // Reads work, writes do not: a server become read-only in a failover answers each take-up with an error.
    const readOnly = Object.assign(new Error('cannot execute UPDATE in a read-only transaction'), { code: '25006', severity: 'ERROR' });
    const refused = jest.spyOn(store, 'resumeClaim').mockRejectedValue(readOnly);
    let progress: PlaceCallProgress = { unsettledClaim: 'claim-w' };
    try {
      for (let pass = 0; pass < 3; pass++) {
        const decision = await placer.place(job, progress);
        expect(decision).toMatchObject({ kind: 'delay', reason: 'claim_unsettled' });
        progress = decision.kind === 'delay' ? decision.progress : {};
      }
      expect(progress.resumingAs).toBeUndefined();
      // Answers lost on the way (each take-up may have committed): kept, the newest 16.
      refused.mockRejectedValue(new Error('Connection terminated unexpectedly'));
      const ids: unknown[] = [];
      for (let pass = 0; pass < 20; pass++) {
        const decision = await placer.place(job, progress);
        progress = decision.kind === 'delay' ? decision.progress : {};
        ids.push(progress.resumingAs?.at(-1));
      }
      expect(refused).toHaveBeenCalledTimes(23);
      expect(new Set(ids).size).toBe(20);
      expect(progress.resumingAs).toEqual(ids.slice(-16));
      expect(progress.unsettledClaim).toBe('claim-w');
    } finally {
      refused.mockRestore();
    }
    expect(await dialsOf(job.runId)).toBe(0);
    // Writes back: the job takes its own claim up and dials once.
    expect(await placer.place(job, progress)).toEqual({ kind: 'done', outcome: 'placed' });
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

  const runOf = async (runId: number) =>
    (await apps.dataSource.query(`SELECT status, end_reason, provider_call_id FROM workflow_runs WHERE id = $1`, [runId]))[0];
  /** The slot an earlier attempt's admission took for the run, before its claim. */
  const takeSlot = async (configurationId: number, runId: number) => {
    const admitted = await apps.dialer!.get(DialAdmission).admit(configurationId, runId, { callsPerSecond: 10, maxConcurrentCalls: 10, leaseMs: 60_000 }, false);
    expect(admitted.kind).toBe('admitted');
  };

  it('ends the run it left dialing under its claim when it finds it cannot dial it (no from number any more), and frees its slot', async () => {
    const { job, configurationId } = await claimedRun('claim-w');
    await takeSlot(configurationId, job.runId);
    // The configuration's numbers taken away between the claim and its job's return.
    await apps.dataSource.query(`UPDATE telephony_configurations SET from_numbers = '{}' WHERE id = $1`, [configurationId]);

    expect(await apps.dialer!.get(CallPlacer).place(job, { unsettledClaim: 'claim-w' })).toEqual({ kind: 'done', outcome: 'failed' });

    expect(await runOf(job.runId)).toEqual({ status: 'failed', end_reason: 'no_from_number', provider_call_id: null });
    expect(await apps.dialer!.get(ConcurrencyLimiter).lease(configurationId, job.runId)).toBeNull();
    expect(await dialsOf(job.runId)).toBe(0);
  });

  it('leaves alone a run claimed since by another job, when it finds it cannot dial it', async () => {
    const { job, configurationId } = await claimedRun('claim-v');
    // Taken up by another claim, whose dial is under way.
    await apps.dialer!.get(WorkflowRunStore).resumeClaim(job.runId, ['claim-v'], 'claim-other', 'dialer.claim_resumed', {
      fromNumber: '+15005550006',
      maxCallDurationSeconds: 60,
    });
    await takeSlot(configurationId, job.runId);
    await apps.dataSource.query(`UPDATE telephony_configurations SET from_numbers = '{}' WHERE id = $1`, [configurationId]);

    expect(await apps.dialer!.get(CallPlacer).place(job, { unsettledClaim: 'claim-v' })).toEqual({ kind: 'done', outcome: 'skipped' });

    expect(await runOf(job.runId)).toEqual({ status: 'dialing', end_reason: null, provider_call_id: null });
    expect(await apps.dialer!.get(ConcurrencyLimiter).lease(configurationId, job.runId)).not.toBeNull();
  });

  it('comes back for its claim when the run cannot be ended after the carrier rejected its dial, and ends it then without a dial', async () => {
    const { job, configurationId } = await claimedRun('claim-u');
    await takeSlot(configurationId, job.runId);
    const placer = apps.dialer!.get(CallPlacer);
    const sandbox = apps.dialer!.get(TelephonyProviders).get('sandbox');
    const dial = jest.spyOn(sandbox, 'placeCall').mockImplementation(async () => {
      throw new CarrierError('Number blocked', { reason: 'carrier_rejected', permanent: true, notProcessed: false, carrierCode: 'X-1' });
    });
    const store = apps.dialer!.get(WorkflowRunStore);
    const transition = store.transition.bind(store);
    // The database fails the run's end twice: on the rejection, and on the job's first return.
    let failures = 2;
    const failing = jest.spyOn(store, 'transition').mockImplementation(async (id, to, event, ...rest) => {
      if (id === job.runId && event === 'carrier.rejected' && failures > 0) {
        failures -= 1;
        throw new Error('Connection terminated unexpectedly');
      }
      return transition(id, to, event, ...rest);
    });
    let dials: number | undefined;
    let last;
    try {
      const first = await placer.place(job, { unsettledClaim: 'claim-u' });
      expect(first).toMatchObject({
        kind: 'delay',
        reason: 'claim_unsettled',
        progress: { unsettledClaim: expect.any(String), rejected: { reason: 'carrier_rejected', message: 'Number blocked', carrierCode: 'X-1' } },
      });
      expect(await runOf(job.runId)).toMatchObject({ status: 'dialing', end_reason: null });
      const progress = first.kind === 'delay' ? first.progress : {};
      // Its first return fails the job (BullMQ retries it with the data it had), its retry ends the run.
      await expect(placer.place(job, progress)).rejects.toThrow('Connection terminated unexpectedly');
      last = await placer.place(job, progress);
      dials = dial.mock.calls.length;
    } finally {
      dial.mockRestore();
      failing.mockRestore();
    }
    expect(last).toEqual({ kind: 'done', outcome: 'failed' });
    // The rejected dial is not sent again.
    expect(dials).toBe(1);
    expect(await runOf(job.runId)).toEqual({ status: 'failed', end_reason: 'carrier_rejected', provider_call_id: null });
    const [entry] = await apps.dataSource.query(
      `SELECT entry->'detail' AS detail FROM workflow_runs, jsonb_array_elements(logs->'events') AS entry WHERE id = $1 AND entry->>'event' = 'carrier.rejected'`,
      [job.runId],
    );
    expect(entry.detail).toEqual({ message: 'Number blocked', carrier_code: 'X-1' });
    expect(await apps.dialer!.get(ConcurrencyLimiter).lease(configurationId, job.runId)).toBeNull();
  });

  it('dials a run handed back to the queue since it was rejected under a claim the job could not settle', async () => {
    const { job } = await claimedRun('claim-t');
    // The reaper found no call and handed the run back while the job waited.
    await apps.dataSource.query(`UPDATE workflow_runs SET status = 'queued' WHERE id = $1`, [job.runId]);
    const rejected = { reason: 'carrier_rejected', message: 'Number blocked', carrierCode: null };
    expect(await apps.dialer!.get(CallPlacer).place(job, { unsettledClaim: 'claim-t', rejected })).toEqual({ kind: 'done', outcome: 'placed' });
    expect(await dialsOf(job.runId)).toBe(1);
  });
});
