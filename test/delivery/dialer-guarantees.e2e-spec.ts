import { getQueueToken } from '@nestjs/bullmq';
import { Queue } from 'bullmq';
import { ConcurrencyLimiter, JobName, placeCallJobId, QueueName } from '@app/queue';
import {
  agentGraph,
  createOrganization,
  runsWhenComplete,
  sandboxDialsByRun,
  seedSandboxConfiguration,
  seedWorkflow,
  TestOrganization,
} from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';
import { WorkflowRunStore } from '@app/persistence';
import { CarrierError, TelephonyProviders } from '@app/telephony';
import { GroupedRunWrites } from '../../apps/dialer/src/runs/grouped-run-writes.service';


describe('every accepted trigger becomes exactly one call attempt', () => {
  let apps: TestApps;

  beforeAll(async () => {
    apps = await startTestApps();
  });
  afterAll(() => apps.close());

  async function orgWithSandbox(settings: Record<string, unknown>, extra: Parameters<typeof seedSandboxConfiguration>[2] = {}) {
    const org = await createOrganization(apps.dataSource);
    const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings, ...extra });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
    return { org, config, workflow };
  }

  async function trigger(org: TestOrganization, uuid: string, count: number, phone = '+14155550100'): Promise<number[]> {
    const ids: number[] = [];
    for (let i = 0; i < count; i++) {
      const response = await apps.client.post(`/api/v1/public/agent/${uuid}`, { phone_number: phone }, { key: org.adminKey });
      expect(response.status).toBe(200);
      ids.push(response.body.workflow_run_id);
    }
    return ids;
  }

  it('places one call when the same run is enqueued again under other job ids', async () => {
    const { org, workflow } = await orgWithSandbox({ ring_ms: 20, talk_ms: 50 });
    const [runId] = await trigger(org, workflow.triggerUuid, 1);
    const queue = apps.dialer!.get<Queue>(getQueueToken(QueueName.Calls));
    await Promise.all(
      [1, 2, 3].map((n) => queue.add(JobName.PlaceCall, { runId, organizationId: org.organizationId }, { jobId: `dup-${runId}-${n}` })),
    );
    const [run] = await runsWhenComplete(apps.dataSource, [runId]);
    expect(run.status).toBe('completed');
    expect((await sandboxDialsByRun(apps.dataSource, [runId])).get(runId)).toBe(1);
  });

  it('retries throttled and not-processed dial requests without failing the run or dialing twice', async () => {
    // Each dial is refused 25% of the time, at random. With 40 runs, that none is refused happens about once in 100,000
    // runs of this test (0.75⁴⁰), and that one is refused 8 times in a row, whose backoffs (doubling from 0.5 s) would
    // take it past the wait below, about once in 1,500 (40 × 0.25⁸).
    const { org, workflow } = await orgWithSandbox({ ring_ms: 20, talk_ms: 50, throttle_rate: 0.15, error_rate: 0.1 });
    const runIds = await trigger(org, workflow.triggerUuid, 40);
    const runs = await runsWhenComplete(apps.dataSource, runIds, 85000);
    expect(runs.map((run) => run.status)).toEqual(runIds.map(() => 'completed'));
    const dials = await sandboxDialsByRun(apps.dataSource, runIds);
    expect([...dials.values()]).toEqual(runIds.map(() => 1));
    const retried = runs.filter((run) => run.logs.events.some((event: { event: string }) => event.event === 'dialer.retry'));
    expect(retried.length).toBeGreaterThan(0);
  }, 90000);

  it('asks the carrier instead of dialing again when the answer to a dial request is lost', async () => {
    const { org, workflow } = await orgWithSandbox({ ring_ms: 20, talk_ms: 50, timeout_rate: 1 });
    const runIds = await trigger(org, workflow.triggerUuid, 3);
    const runs = await runsWhenComplete(apps.dataSource, runIds);
    expect(runs.map((run) => run.status)).toEqual(['completed', 'completed', 'completed']);
    expect([...(await sandboxDialsByRun(apps.dataSource, runIds)).values()]).toEqual([1, 1, 1]);
    for (const run of runs) {
      expect(run.logs.events.map((event: { event: string }) => event.event)).toContain('dialer.reconciled');
    }
  });

  it('ends a permanently rejected dial failed with the carrier reason and does not retry it', async () => {
    const { org, workflow } = await orgWithSandbox({ ring_ms: 20, talk_ms: 50 });
    const [runId] = await trigger(org, workflow.triggerUuid, 1, '+14155550004');
    const [run] = await runsWhenComplete(apps.dataSource, [runId]);
    expect(run).toMatchObject({ status: 'failed', end_reason: 'carrier_rejected' });
    expect((await sandboxDialsByRun(apps.dataSource, [runId])).get(runId)).toBe(1);
  });

  describe('when the database fails a dial job between its claim and its dial', () => {
    /**
     * Runs created from here on: the ones a test's stand-in for a failing database acts on, each once. The id
     * sequence says where they start; the largest stored id would not, since other suites sharing the database
     * store runs under ids of their own choosing (ten digits, in the downloads' tests).
     */
    async function newRunsAfterNow(): Promise<(runId: number) => boolean> {
      const [{ last }] = await apps.dataSource.query(
        `SELECT COALESCE(pg_sequence_last_value(pg_get_serial_sequence('workflow_runs', 'id')::regclass), 0)::float8 AS last`,
      );
      const seen = new Set<number>();
      return (runId) => {
        if (runId <= last || seen.has(runId)) return false;
        seen.add(runId);
        return true;
      };
    }
    const events = (run: { logs: { events: Array<{ event: string }> } }) => run.logs.events.map((entry) => entry.event);

    it('dials once a run whose claim committed but whose answer was lost', async () => {
      const { org, workflow } = await orgWithSandbox({ ring_ms: 20, talk_ms: 50 });
      const writes = apps.dialer!.get(GroupedRunWrites);
      const claim = writes.claim.bind(writes);
      const firstOf = await newRunsAfterNow();
      const lost = jest.spyOn(writes, 'claim').mockImplementation(async (...args) => {
        const claimed = await claim(...args);
        if (firstOf(args[0])) throw new Error('Connection terminated unexpectedly');
        return claimed;
      });
      try {
        const runIds = await trigger(org, workflow.triggerUuid, 3);
        const runs = await runsWhenComplete(apps.dataSource, runIds);
        expect(runs.map((run) => run.status)).toEqual(['completed', 'completed', 'completed']);
        expect([...(await sandboxDialsByRun(apps.dataSource, runIds)).values()]).toEqual([1, 1, 1]);
        for (const run of runs) expect(events(run)).toEqual(expect.arrayContaining(['dialer.dialing', 'dialer.claim_resumed']));
      } finally {
        lost.mockRestore();
      }
    });

    it('claims again, and dials once, a run whose claim never reached the database', async () => {
      const { org, workflow } = await orgWithSandbox({ ring_ms: 20, talk_ms: 50 });
      const writes = apps.dialer!.get(GroupedRunWrites);
      const claim = writes.claim.bind(writes);
      const firstOf = await newRunsAfterNow();
      // Every claim of a run, in order: whether the stand-in refused it or handed it to the database.
      const claims: Array<{ runId: number; outcome: 'refused' | 'passed' }> = [];
      const refused = jest.spyOn(writes, 'claim').mockImplementation(async (...args) => {
        if (firstOf(args[0])) {
          claims.push({ runId: Number(args[0]), outcome: 'refused' });
          throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
        }
        claims.push({ runId: Number(args[0]), outcome: 'passed' });
        return claim(...args);
      });
      try {
        const [runId] = await trigger(org, workflow.triggerUuid, 1);
        const [run] = await runsWhenComplete(apps.dataSource, [runId]);
        expect(run.status).toBe('completed');
        expect((await sandboxDialsByRun(apps.dataSource, [runId])).get(runId)).toBe(1);
        expect(events(run)).not.toContain('dialer.claim_resumed');
        // The refusal did happen, to this run's first claim, once; and the run was claimed again after it.
        const outcomes = claims.filter((entry) => entry.runId === Number(runId)).map((entry) => entry.outcome);
        expect(outcomes[0]).toBe('refused');
        expect(outcomes.filter((outcome) => outcome === 'refused')).toHaveLength(1);
        expect(outcomes.slice(1)).toContain('passed');
      } finally {
        refused.mockRestore();
      }
    });

    it('dials again, once, a run the carrier refused unprocessed when handing it back failed', async () => {
      const { org, workflow } = await orgWithSandbox({ ring_ms: 20, talk_ms: 50 });
      const sandbox = apps.dialer!.get(TelephonyProviders).get('sandbox');
      const store = apps.dialer!.get(WorkflowRunStore);
      const placeCall = sandbox.placeCall.bind(sandbox);
      const transition = store.transition.bind(store);
      const refusedOnce = await newRunsAfterNow();
      const handBackFailsOnce = await newRunsAfterNow();
      const dials = jest.spyOn(sandbox, 'placeCall').mockImplementation(async (request) => {
        if (refusedOnce(request.runId)) throw new CarrierError('Busy, try again', { reason: 'carrier_busy', permanent: false, notProcessed: true });
        return placeCall(request);
      });
      const moves = jest.spyOn(store, 'transition').mockImplementation(async (...args) => {
        if (args[2] === 'dialer.retry' && handBackFailsOnce(args[0])) throw new Error('Connection terminated unexpectedly');
        return transition(...args);
      });
      try {
        const [runId] = await trigger(org, workflow.triggerUuid, 1);
        const [run] = await runsWhenComplete(apps.dataSource, [runId]);
        expect(run.status).toBe('completed');
        // The refused request never reached the sandbox's call log: the one call is the dial made after it.
        expect((await sandboxDialsByRun(apps.dataSource, [runId])).get(runId)).toBe(1);
        expect(events(run)).toEqual(expect.arrayContaining(['dialer.dialing', 'dialer.claim_resumed']));
        expect(events(run)).not.toContain('dialer.retry');
      } finally {
        dials.mockRestore();
        moves.mockRestore();
      }
    });
  });

  it('caps the calls live at once at max_concurrent_calls and delays the rest instead of failing them', async () => {
    const { org, workflow } = await orgWithSandbox({ ring_ms: 50, talk_ms: 400 }, { maxConcurrentCalls: 2, callsPerSecond: 100 });
    const runIds = await trigger(org, workflow.triggerUuid, 6);
    let maxLive = 0;
    let done = false;
    while (!done) {
      const rows: Array<{ live: number; open: number }> = await apps.dataSource.query(
        `SELECT count(*) FILTER (WHERE status IN ('dialing', 'ringing', 'in_progress'))::int AS live,
                count(*) FILTER (WHERE NOT is_completed)::int AS open
           FROM workflow_runs WHERE id = ANY($1)`,
        [runIds],
      );
      maxLive = Math.max(maxLive, rows[0].live);
      done = rows[0].open === 0;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(maxLive).toBe(2);
    const runs = await runsWhenComplete(apps.dataSource, runIds);
    expect(runs.every((run) => run.status === 'completed')).toBe(true);
  });
});

/** An organization whose sandbox configuration allows one call at a time, and its published agent. */
async function oneSlotAgent(apps: TestApps, talkMs: number) {
  const org = await createOrganization(apps.dataSource);
  const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId, {
    settings: { ring_ms: 20, talk_ms: talkMs },
    maxConcurrentCalls: 1,
    callsPerSecond: 100,
  });
  const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
  return { org, config, workflow };
}

describe('a run whose dial job is duplicated', () => {
  let apps: TestApps;

  beforeAll(async () => {
    // No dialer yet: the jobs are all waiting when the first one starts, so they race for the same run.
    apps = await startTestApps({ dialer: false });
  });
  afterAll(() => apps.close());

  it("keeps the winning job's concurrency slot while its call is live when the other jobs lose the claim", async () => {
    const { org, config, workflow } = await oneSlotAgent(apps, 3000);
    const response = await apps.client.post(`/api/v1/public/agent/${workflow.triggerUuid}`, { phone_number: '+14155550100' }, { key: org.adminKey });
    expect(response.status).toBe(200);
    const runId: number = response.body.workflow_run_id;
    const queue = apps.api.get<Queue>(getQueueToken(QueueName.Calls));
    await Promise.all(
      [1, 2, 3].map((n) => queue.add(JobName.PlaceCall, { runId, organizationId: org.organizationId }, { jobId: `dup-${runId}-${n}` })),
    );

    const dialer = await apps.addDialer();
    const slots = dialer.get(ConcurrencyLimiter);
    await waitFor(
      async () => {
        const [run] = await apps.dataSource.query(`SELECT status FROM workflow_runs WHERE id = $1`, [runId]);
        return run.status === 'in_progress' ? true : undefined;
      },
      { what: 'the call to be answered' },
    );
    expect(await slots.inUse(config.id)).toBe(1);
    const [run] = await runsWhenComplete(apps.dataSource, [runId]);
    expect(run.status).toBe('completed');
    expect((await sandboxDialsByRun(apps.dataSource, [runId])).get(runId)).toBe(1);
    expect(await slots.inUse(config.id)).toBe(0);
  });
});

describe('a dial job whose run moved on before a dialer took it', () => {
  let apps: TestApps;

  beforeAll(async () => {
    // No dialer yet: the API's jobs, with the run's route, wait until the runs have moved on.
    apps = await startTestApps({ dialer: false });
  });
  afterAll(() => apps.close());

  it('places no call and keeps no slot for a canceled run or for copies of a finished run', async () => {
    const { org, config, workflow } = await oneSlotAgent(apps, 50);
    const trigger = async () => {
      const response = await apps.client.post(`/api/v1/public/agent/${workflow.triggerUuid}`, { phone_number: '+14155550100' }, { key: org.adminKey });
      expect(response.status).toBe(200);
      return response.body.workflow_run_id as number;
    };
    const [canceled, dialed] = [await trigger(), await trigger()];
    const queue = apps.api.get<Queue>(getQueueToken(QueueName.Calls));
    const job = await queue.getJob(placeCallJobId(dialed));
    expect(job?.data.route).toEqual({
      telephonyConfigurationId: config.id,
      workflowId: workflow.workflowId,
      environment: 'production',
      triggerUuid: workflow.triggerUuid,
    });
    const canceledJob = await queue.getJob(placeCallJobId(canceled));
    const cancel = await apps.client.post(`/api/v1/workflow/${workflow.workflowId}/runs/${canceled}/cancel`, undefined, { key: org.adminKey });
    expect(cancel.status).toBe(200);
    // The cancel drops the job; one a dialer held at that moment, or one the drop failed for, lives on: a copy of it.
    await waitFor(async () => ((await queue.getJob(placeCallJobId(canceled))) === undefined ? true : undefined), { what: "the canceled run's job to be dropped" });
    const survivor = await queue.add(JobName.PlaceCall, canceledJob!.data, { jobId: `survivor-${canceled}` });

    const dialer = await apps.addDialer();
    const [run] = await runsWhenComplete(apps.dataSource, [dialed]);
    expect(run.status).toBe('completed');
    // Copies of the finished run's job, route included, as a retry after a lost acknowledgement would bring back.
    const copies = await Promise.all([1, 2, 3].map((n) => queue.add(JobName.PlaceCall, job!.data, { jobId: `copy-${dialed}-${n}` })));
    const outcomes = await waitFor(async () => {
      const jobs = await Promise.all([survivor.id!, ...copies.map((copy) => copy.id!)].map((id) => queue.getJob(id)));
      return jobs.every((each) => each?.finishedOn) ? jobs.map((each) => each!.returnvalue) : undefined;
    });
    expect(outcomes).toEqual(['skipped', 'skipped', 'skipped', 'skipped']);
    const dials = await sandboxDialsByRun(apps.dataSource, [canceled, dialed]);
    expect([dials.get(canceled), dials.get(dialed)]).toEqual([0, 1]);
    expect(await dialer.get(ConcurrencyLimiter).inUse(config.id)).toBe(0);
  });
});
