import { getQueueToken } from '@nestjs/bullmq';
import { Queue } from 'bullmq';
import { WorkflowRunStore } from '@app/persistence';
import { placeCallJobId, QueueName, RedisClient } from '@app/queue';
import { TelephonyProviders } from '@app/telephony';
import { CallPlacer } from '../../apps/dialer/src/calls/call-placer.service';
import { RunReaper } from '../../apps/dialer/src/recovery/run-reaper.service';
import { GroupedRunWrites } from '../../apps/dialer/src/runs/grouped-run-writes.service';
import { sandboxDialsByRun } from '../support/fixtures';
import { loseNextAnswer } from '../support/lose-next-answer';
import { queuedSandboxRun } from '../support/queued-sandbox-run';
import { startTestAppsWithPausedWorkers, TestApps } from '../support/test-apps';

/**
 * A dial job whose claim committed but whose answer was lost keeps the
 * claim's id and comes back to take it up; no call went out under it. If
 * Postgres stays away long enough, the job's retries back off past the dial
 * timeout, and the reaper finds the run `dialing` without a call id. The
 * carrier cannot say whether a call exists (a look-up that answers
 * "unknown", as every carrier but the sandbox may), so the reaper would end
 * the run `dial_outcome_unknown`: a call never placed, and never placed
 * after. The workers are paused; the test runs the attempts and the
 * reaper's round itself.
 */
describe('the reaper and a dial job coming back for its unsettled claim', () => {
  let apps: TestApps;

  beforeAll(async () => {
    // Rounds by hand only: one of its own between a test's scene and its round would have looked at the run already.
    apps = await startTestAppsWithPausedWorkers({ REAPER_INTERVAL_MS: '600000' });
  });
  afterAll(() => apps.close());

  const queuedRun = () => queuedSandboxRun(apps);
  /** How often the last `reapPastTheDialTimeout` asked the carrier about the run. */
  let lookupsInLastRound = 0;

  /** One attempt whose claim commits and whose answer is lost; the job keeps what it noted, as the processor does. */
  async function claimAnswerLost(job: { runId: number; organizationId: number }) {
    const lost = loseNextAnswer(apps.dialer!.get(GroupedRunWrites), 'claim');
    let decision;
    try {
      decision = await apps.dialer!.get(CallPlacer).place(job);
    } finally {
      lost.mockRestore();
    }
    expect(decision).toMatchObject({ kind: 'delay', reason: 'claim_unsettled' });
    const progress = decision.kind === 'delay' ? decision.progress : {};
    const queued = await apps.dialer!.get<Queue>(getQueueToken(QueueName.Calls)).getJob(placeCallJobId(job.runId));
    await queued!.updateData({ ...job, ...progress });
    return progress;
  }

  /** Past the dial timeout since its claim, with a carrier that cannot tell whether the call exists; one reaper round. */
  async function reapPastTheDialTimeout(runId: number, claimedAgo = '5 minutes'): Promise<{ status: string; end_reason: string | null }> {
    await apps.dataSource.query(`UPDATE workflow_runs SET status_changed_at = now() - $2::interval WHERE id = $1`, [runId, claimedAgo]);
    const lookup = jest.spyOn(apps.dialer!.get(TelephonyProviders).get('sandbox'), 'lookupCall').mockResolvedValue({ kind: 'unknown' });
    try {
      await apps.dialer!.get(RunReaper).round();
      lookupsInLastRound = lookup.mock.calls.filter(([call]) => call.runId === runId).length;
    } finally {
      lookup.mockRestore();
    }
    const [run] = await apps.dataSource.query(`SELECT status, end_reason FROM workflow_runs WHERE id = $1`, [runId]);
    return run;
  }

  it('leaves the run to the job, which then takes its claim up and dials once', async () => {
    const job = await queuedRun();
    const progress = await claimAnswerLost(job);

    expect(await reapPastTheDialTimeout(job.runId)).toEqual({ status: 'dialing', end_reason: null });
    // No call went out under that claim: nothing for the carrier to find, and no look-up spent on it.
    expect(lookupsInLastRound).toBe(0);
    expect(await apps.dialer!.get(CallPlacer).place(job, progress)).toEqual({ kind: 'done', outcome: 'placed' });
    expect((await sandboxDialsByRun(apps.dataSource, [job.runId])).get(job.runId)).toBe(1);
  });

  it('waits for the job only so long: ten minutes past the dial timeout the run is ended as before', async () => {
    const job = await queuedRun();
    await claimAnswerLost(job);
    // A job sent back to wait spends no attempt: one whose writes keep failing would never finish.
    expect(await reapPastTheDialTimeout(job.runId, '13 minutes')).toEqual({ status: 'failed', end_reason: 'dial_outcome_unknown' });
  });

  it('ends the run as before once no job comes back for the claim', async () => {
    const job = await queuedRun();
    await claimAnswerLost(job);
    // The job has run out of attempts and finished: nothing will take the claim up.
    const queue = apps.dialer!.get<Queue>(getQueueToken(QueueName.Calls));
    await queue.remove(placeCallJobId(job.runId));

    expect(await reapPastTheDialTimeout(job.runId)).toEqual({ status: 'failed', end_reason: 'dial_outcome_unknown' });
    expect(lookupsInLastRound).toBe(1);
    expect((await sandboxDialsByRun(apps.dataSource, [job.runId])).get(job.runId)).toBe(0);
  });

  it('does not end it without a call once a call id arrived after the round read the run: that call is to be hung up', async () => {
    const job = await queuedRun();
    await claimAnswerLost(job);
    await apps.dialer!.get<Queue>(getQueueToken(QueueName.Calls)).remove(placeCallJobId(job.runId));
    const store = apps.dialer!.get(WorkflowRunStore);
    const transition = store.transition.bind(store);
    // A dial that answered late (its dialer stopped meanwhile) stores its call's id between the round's read and its end.
    const late = jest.spyOn(store, 'transition').mockImplementation(async (id, to, event, ...rest) => {
      if (id === job.runId && event === 'reaper.failed') {
        await apps.dataSource.query(`UPDATE workflow_runs SET provider_call_id = 'SB-answered-late' WHERE id = $1`, [id]);
      }
      return transition(id, to, event, ...rest);
    });
    try {
      expect(await reapPastTheDialTimeout(job.runId)).toEqual({ status: 'dialing', end_reason: null });
    } finally {
      late.mockRestore();
    }
    // Not ended `dial_outcome_unknown` with its call left ringing: the next round asks the carrier about that call.
    const [run] = await apps.dataSource.query(`SELECT provider_call_id FROM workflow_runs WHERE id = $1`, [job.runId]);
    expect(run.provider_call_id).toBe('SB-answered-late');
  });

  describe('a run the carrier has no call for, whose dial job a dialer holds', () => {
    /** A run claimed by a dialer that then died before its dial, its job held by another (its lock taken). */
    async function claimedAndHeld() {
      const job = await queuedRun();
      const claimed = await apps.dialer!.get(GroupedRunWrites).claim(job.runId, 'dialer.dialing', { fromNumber: '+15005550006' }, { claim: 'dead-dialer' });
      expect(claimed).not.toBeNull();
      const redis = apps.dialer!.get(RedisClient);
      const lock = redis.keyFor(QueueName.Calls, placeCallJobId(job.runId), 'lock');
      await redis.redis.set(lock, 'another-dialer', 'PX', 60_000);
      return { job, release: () => redis.redis.del(lock) };
    }
    /** One reaper round, the claim made `claimedAgo`, the carrier's own answer (the sandbox has no such call). */
    async function reap(runId: number, claimedAgo: string) {
      await apps.dataSource.query(`UPDATE workflow_runs SET status_changed_at = now() - $2::interval WHERE id = $1`, [runId, claimedAgo]);
      await apps.dialer!.get(RunReaper).round();
      return (await apps.dataSource.query(`SELECT status, end_reason FROM workflow_runs WHERE id = $1`, [runId]))[0];
    }

    it('leaves it past the dial timeout while the job is held, and queues it again once the job lets go', async () => {
      const { job, release } = await claimedAndHeld();
      expect(await reap(job.runId, '5 minutes')).toEqual({ status: 'dialing', end_reason: null });
      await release();
      expect(await reap(job.runId, '5 minutes')).toEqual({ status: 'queued', end_reason: null });
      expect(await apps.dialer!.get(CallPlacer).place(job)).toEqual({ kind: 'done', outcome: 'placed' });
      expect((await sandboxDialsByRun(apps.dataSource, [job.runId])).get(job.runId)).toBe(1);
    });

    it('ends it as before ten minutes past the dial timeout, however long the job is held', async () => {
      const { job, release } = await claimedAndHeld();
      try {
        expect(await reap(job.runId, '13 minutes')).toEqual({ status: 'failed', end_reason: 'dial_outcome_unknown' });
      } finally {
        await release();
      }
    });
  });
});
