import { APP_CONFIG, AppConfig } from '@app/config';
import { TelephonyConfiguration, WorkflowRunStore } from '@app/persistence';
import { ConcurrencyLimiter, RedisClient } from '@app/queue';
import { CarrierError, TelephonyProviders } from '@app/telephony';
import { CallPlacer } from '../../apps/dialer/src/calls/call-placer.service';
import { DefinitionPicker } from '../../apps/dialer/src/calls/definition-picker.service';
import { ConfigurationLookup } from '../../apps/dialer/src/lookups/configuration-lookup.service';
import { agentGraph, createOrganization, sandboxDialsByRun, seedSandboxConfiguration, seedWorkflow } from '../support/fixtures';
import { startTestAppsWithPausedWorkers, TestApps } from '../support/test-apps';

/**
 * A run's concurrency slot between its admission and its dial: an attempt
 * that stops in between (Postgres away) must neither hold the slot unused
 * behind the pacing backlog nor give away the slot of a claim it comes back
 * for. These drive the dialer's `CallPlacer` attempt by attempt, with the
 * workers paused, the way BullMQ would call it.
 */
describe('a concurrency slot taken for a dial that has not gone out', () => {
  let apps: TestApps;

  beforeAll(async () => {
    apps = await startTestAppsWithPausedWorkers();
  });
  afterAll(() => apps.close());

  /** `count` queued runs of one sandbox configuration, and their jobs as the trigger enqueued them. */
  async function queuedRuns(count: number, options: { callsPerSecond?: number; maxConcurrentCalls?: number } = {}) {
    const org = await createOrganization(apps.dataSource);
    const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 20, talk_ms: 50 }, ...options });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
    const jobs: Array<{ runId: number; organizationId: number }> = [];
    for (let i = 0; i < count; i++) {
      const response = await apps.client.post(
        `/api/v1/public/agent/${workflow.triggerUuid}`,
        { phone_number: '+14155550100' },
        { key: org.adminKey },
      );
      expect(response.status).toBe(200);
      jobs.push({ runId: response.body.workflow_run_id, organizationId: org.organizationId });
    }
    const cancel = (runId: number) =>
      apps.client.post(`/api/v1/workflow/${workflow.workflowId}/runs/${runId}/cancel`, undefined, { key: org.adminKey });
    return { jobs, configurationId: config.id, cancel };
  }

  /** Admits `job` (its slot taken) and fails its attempt before the claim, as a lost Postgres connection would. */
  async function admittedWithoutClaim(job: { runId: number; organizationId: number }): Promise<void> {
    const pick = jest.spyOn(apps.dialer!.get(DefinitionPicker), 'pick').mockRejectedValueOnce(new Error('Connection terminated unexpectedly'));
    try {
      await expect(apps.dialer!.get(CallPlacer).place(job)).rejects.toThrow('Connection terminated unexpectedly');
    } finally {
      pick.mockRestore();
    }
  }

  const dialsOf = async (runId: number) => (await sandboxDialsByRun(apps.dataSource, [runId])).get(runId);
  const slotsInUse = (configurationId: number) => apps.dialer!.get(ConcurrencyLimiter).inUse(configurationId);

  /** The first `to` move of `runId` fails as a lost connection would, before it commits. */
  function failFirstMove(runId: number, to: string) {
    const store = apps.dialer!.get(WorkflowRunStore);
    const transition = store.transition.bind(store);
    let failed = false;
    return jest.spyOn(store, 'transition').mockImplementation(async (...args) => {
      if (!failed && args[0] === runId && args[1] === to) {
        failed = true;
        throw new Error('Connection terminated unexpectedly');
      }
      return transition(...args);
    });
  }

  it('dials on the slot an attempt took before failing, not behind the pacing backlog built since', async () => {
    const {
      jobs: [job],
      configurationId,
    } = await queuedRuns(1, { callsPerSecond: 2, maxConcurrentCalls: 1 });
    const placer = apps.dialer!.get(CallPlacer);
    // Admitted (its slot taken), then the definition cannot be read: BullMQ retries the job with the data it had.
    await admittedWithoutClaim(job);
    expect(await slotsInUse(configurationId)).toBe(1);
    // Meanwhile the configuration's other runs have reserved the instants of the next ten minutes.
    const redis = apps.dialer!.get(RedisClient);
    const [seconds, micros] = await redis.redis.time();
    await redis.redis.set(redis.keyFor('pace', configurationId), String(Number(seconds) * 1000 + Number(micros) / 1000 + 600_000), 'PX', 700_000);

    expect(await placer.place(job)).toEqual({ kind: 'done', outcome: 'placed' });
    expect(await dialsOf(job.runId)).toBe(1);
  });

  it('leases the slot for as long as the call may live before the reaper would end it: dialing, ringing, the maximum, and a minute', async () => {
    const {
      jobs: [job],
      configurationId,
    } = await queuedRuns(1, { maxConcurrentCalls: 1 });
    const before = Date.now();
    await admittedWithoutClaim(job);
    const after = Date.now();
    const { dialTimeoutSeconds, ringTimeoutSeconds } = apps.dialer!.get<AppConfig>(APP_CONFIG);
    const [{ max_call_duration_seconds: maxSeconds }] = await apps.dataSource.query(
      `SELECT max_call_duration_seconds FROM telephony_configurations WHERE id = $1`,
      [configurationId],
    );
    const lifeMs = (dialTimeoutSeconds + ringTimeoutSeconds + maxSeconds + 60) * 1000;
    const expiresAt = Number(await apps.dialer!.get(ConcurrencyLimiter).lease(configurationId, job.runId));
    // Scored on Redis' clock, which is this machine's.
    expect(expiresAt).toBeGreaterThanOrEqual(before + lifeMs - 1000);
    expect(expiresAt).toBeLessThanOrEqual(after + lifeMs + 1000);
    await apps.dialer!.get(ConcurrencyLimiter).release(configurationId, job.runId);
  });

  it('frees the slot an earlier attempt took when the run fails before its claim (its configuration lost its from numbers)', async () => {
    const {
      jobs: [job],
      configurationId,
    } = await queuedRuns(1, { maxConcurrentCalls: 1 });
    await admittedWithoutClaim(job);
    expect(await slotsInUse(configurationId)).toBe(1);
    // The configuration as the dialer reads it next: its from numbers removed meanwhile.
    const lookup = apps.dialer!.get(ConfigurationLookup);
    const find = lookup.find.bind(lookup);
    const numberless = jest
      .spyOn(lookup, 'find')
      .mockImplementationOnce(async (...args) => Object.assign(new TelephonyConfiguration(), await find(...args), { fromNumbers: [] }));
    try {
      expect(await apps.dialer!.get(CallPlacer).place(job)).toEqual({ kind: 'done', outcome: 'failed' });
    } finally {
      numberless.mockRestore();
    }
    const [run] = await apps.dataSource.query(`SELECT status, end_reason FROM workflow_runs WHERE id = $1`, [job.runId]);
    expect(run).toEqual({ status: 'failed', end_reason: 'no_from_number' });
    expect(await slotsInUse(configurationId)).toBe(0);
  });

  it('keeps the slot of a run the carrier refused for good while the run cannot be ended, as for any run still dialing', async () => {
    const {
      jobs: [job],
      configurationId,
    } = await queuedRuns(1, { maxConcurrentCalls: 1 });
    const sandbox = apps.dialer!.get(TelephonyProviders).get('sandbox');
    const refused = jest.spyOn(sandbox, 'placeCall').mockRejectedValueOnce(new CarrierError('Not a number', { reason: 'invalid_number', permanent: true, notProcessed: false }));
    const move = failFirstMove(job.runId, 'failed');
    try {
      // The job comes back for its claim (test/delivery/claim-resume.e2e-spec.ts follows it on).
      expect(await apps.dialer!.get(CallPlacer).place(job)).toMatchObject({ kind: 'delay', reason: 'claim_unsettled' });
    } finally {
      refused.mockRestore();
      move.mockRestore();
    }
    const [run] = await apps.dataSource.query(`SELECT status FROM workflow_runs WHERE id = $1`, [job.runId]);
    expect(run.status).toBe('dialing');
    expect(await slotsInUse(configurationId)).toBe(1);
  });

  it('frees the slot when the run is canceled while its job waits to come back, so the next run dials on it', async () => {
    const {
      jobs: [job, other],
      configurationId,
      cancel,
    } = await queuedRuns(2, { maxConcurrentCalls: 1 });
    await admittedWithoutClaim(job);
    expect(await slotsInUse(configurationId)).toBe(1);
    expect(await apps.dialer!.get(CallPlacer).place(other)).toMatchObject({ kind: 'delay', reason: 'concurrency' });

    // The cancel drops the job that would have freed the slot on its next attempt.
    const canceled = await cancel(job.runId);
    expect({ status: canceled.status, run: canceled.body.status }).toEqual({ status: 200, run: 'canceled' });
    expect(await slotsInUse(configurationId)).toBe(0);
    expect(await apps.dialer!.get(CallPlacer).place(other)).toEqual({ kind: 'done', outcome: 'placed' });
    expect(await dialsOf(other.runId)).toBe(1);
    expect(await dialsOf(job.runId)).toBe(0);
  });

  it('frees the slot of an ended run whose job comes back, should nothing else have freed it', async () => {
    const {
      jobs: [job],
      configurationId,
    } = await queuedRuns(1, { maxConcurrentCalls: 1 });
    await admittedWithoutClaim(job);
    // Ended behind the dialer's back, as a cancel whose own release failed (Redis away) leaves it.
    await apps.dialer!.get(WorkflowRunStore).transition(job.runId, 'canceled', 'api.canceled', { endReason: 'canceled', endedAt: new Date() }, undefined, [
      'queued',
    ]);
    expect(await slotsInUse(configurationId)).toBe(1);
    expect(await apps.dialer!.get(CallPlacer).place(job)).toEqual({ kind: 'done', outcome: 'skipped' });
    expect(await slotsInUse(configurationId)).toBe(0);
    expect(await dialsOf(job.runId)).toBe(0);
  });

  it('keeps its slot when the carrier refused the dial unprocessed and the run cannot be handed back, and dials on it', async () => {
    const {
      jobs: [job, other],
      configurationId,
    } = await queuedRuns(2, { maxConcurrentCalls: 1 });
    const placer = apps.dialer!.get(CallPlacer);
    const unprocessed = new CarrierError('Sandbox carrier: 503 service unavailable, request not processed', {
      reason: 'carrier_unavailable',
      permanent: false,
      notProcessed: true,
    });
    const refuse = jest.spyOn(apps.dialer!.get(TelephonyProviders).get('sandbox'), 'placeCall').mockRejectedValueOnce(unprocessed);
    const requeue = failFirstMove(job.runId, 'queued');
    let first;
    try {
      first = await placer.place(job);
    } finally {
      refuse.mockRestore();
      requeue.mockRestore();
    }
    expect(first).toMatchObject({ kind: 'delay', reason: 'claim_unsettled' });
    const [run] = await apps.dataSource.query(`SELECT status FROM workflow_runs WHERE id = $1`, [job.runId]);
    expect(run.status).toBe('dialing');
    expect(await slotsInUse(configurationId)).toBe(1);

    // The run is still this job's claim, and the one slot still its own: another run must wait for it.
    expect(await placer.place(other)).toMatchObject({ kind: 'delay', reason: 'concurrency' });
    expect(await placer.place(job, first.kind === 'delay' ? first.progress : {})).toEqual({ kind: 'done', outcome: 'placed' });
    expect(await dialsOf(job.runId)).toBe(1);
    expect(await dialsOf(other.runId)).toBe(0);
  });

  it('keeps its slot when a claimed run cannot be ended before its dial', async () => {
    const {
      jobs: [job],
      configurationId,
    } = await queuedRuns(1);
    const placer = apps.dialer!.get(CallPlacer);
    // The workflow's definition no longer holds the trigger: the claimed run is to end `failed`, and that write fails.
    const pick = jest.spyOn(apps.dialer!.get(DefinitionPicker), 'pick').mockResolvedValue(null);
    const end = failFirstMove(job.runId, 'failed');
    try {
      const first = await placer.place(job);
      expect(first).toMatchObject({ kind: 'delay', reason: 'claim_unsettled' });
      expect(await slotsInUse(configurationId)).toBe(1);

      expect(await placer.place(job, first.kind === 'delay' ? first.progress : {})).toEqual({ kind: 'done', outcome: 'failed' });
    } finally {
      pick.mockRestore();
      end.mockRestore();
    }
    expect(await slotsInUse(configurationId)).toBe(0);
    expect(await dialsOf(job.runId)).toBe(0);
  });
});
