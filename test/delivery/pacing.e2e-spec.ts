import { getQueueToken } from '@nestjs/bullmq';
import { Queue } from 'bullmq';
import { PacingInstants, placeCallJobId, QueueName, RedisClient } from '@app/queue';
import { agentGraph, createOrganization, runsWhenComplete, seedSandboxConfiguration, seedWorkflow } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

/** When the carrier was asked to dial each of the runs (ms since the epoch, Postgres' clock), in order. */
async function dialTimes(apps: TestApps, runIds: number[]): Promise<number[]> {
  const dials: Array<{ at: number }> = await apps.dataSource.query(
    `SELECT extract(epoch FROM created_at) * 1000 AS at FROM sandbox_calls WHERE run_id = ANY($1) ORDER BY created_at`,
    [runIds],
  );
  return dials.map((dial) => Number(dial.at));
}

describe('calls_per_second across dialer replicas', () => {
  let apps: TestApps;

  beforeAll(async () => {
    // Two dialers, each working one job at a time, so both take part.
    apps = await startTestApps({ env: { DIALER_CONCURRENCY: '1' } });
    await apps.addDialer({ DIALER_CONCURRENCY: '1' });
  });
  afterAll(() => apps.close());

  it('holds the configured rate across two dialers, evenly spaced rather than in bursts', async () => {
    const org = await createOrganization(apps.dataSource);
    const cps = 5;
    const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId, {
      settings: { ring_ms: 10, talk_ms: 10 },
      callsPerSecond: cps,
    });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
    const runIds: number[] = [];
    for (let i = 0; i < 16; i++) {
      const response = await apps.client.post(
        `/api/v1/public/agent/${workflow.triggerUuid}`,
        { phone_number: '+14155550100', telephony_configuration_id: config.id },
        { key: org.adminKey },
      );
      runIds.push(response.body.workflow_run_id);
    }
    await runsWhenComplete(apps.dataSource, runIds, 30000);

    const times = await dialTimes(apps, runIds);
    expect(times).toHaveLength(16);
    const spanSeconds = (times[times.length - 1] - times[0]) / 1000;
    const rate = (times.length - 1) / spanSeconds;
    // Measured rate within 20% of the target, whatever the number of dialers.
    expect(rate).toBeGreaterThan(cps * 0.8);
    expect(rate).toBeLessThan(cps * 1.2);
    // Smooth, not a burst at each second's start: the typical gap is the interval, and no second holds more than cps + 1.
    // The ledger records a dial some milliseconds after its admission, unevenly when the machine is busy (a late dial
    // then sits close to the next, on time), so a short gap here and there is jitter: any four dials in a row still
    // span two intervals of the three they would evenly. A burst of cps at once would put four dials within milliseconds.
    const interval = 1000 / cps;
    const gaps = times.slice(1).map((time, index) => time - times[index]);
    const sortedGaps = [...gaps].sort((a, b) => a - b);
    expect(sortedGaps[Math.floor(sortedGaps.length / 2)]).toBeGreaterThan(interval * 0.8);
    const fourInARow = times.slice(3).map((time, index) => time - times[index]);
    expect(Math.min(...fourInARow)).toBeGreaterThanOrEqual(interval * 2);
    for (const start of times) {
      expect(times.filter((time) => time >= start && time < start + 1000).length).toBeLessThanOrEqual(cps + 1);
    }
  });

  it("never lets one configuration's backlog hold up another configuration's calls", async () => {
    const org = await createOrganization(apps.dataSource);
    const slow = await seedSandboxConfiguration(apps.dataSource, org.organizationId, {
      settings: { ring_ms: 10, talk_ms: 10 },
      callsPerSecond: 0.2,
    });
    const fast = await seedSandboxConfiguration(apps.dataSource, org.organizationId, {
      settings: { ring_ms: 10, talk_ms: 10 },
      callsPerSecond: 50,
      isDefaultOutbound: false,
    });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
    const fire = async (configId: number) =>
      (
        await apps.client.post(
          `/api/v1/public/agent/${workflow.triggerUuid}`,
          { phone_number: '+14155550100', telephony_configuration_id: configId },
          { key: org.adminKey },
        )
      ).body.workflow_run_id as number;
    // A campaign of 20 calls at 0.2 per second would take 100 s to drain.
    const backlog: number[] = [];
    for (let i = 0; i < 20; i++) backlog.push(await fire(slow.id));
    const started = Date.now();
    const urgent = [await fire(fast.id), await fire(fast.id), await fire(fast.id)];
    await runsWhenComplete(apps.dataSource, urgent, 10000);
    expect(Date.now() - started).toBeLessThan(10000);
    const [waiting] = await apps.dataSource.query(
      `SELECT count(*)::int AS n FROM workflow_runs WHERE id = ANY($1) AND status = 'queued'`,
      [backlog],
    );
    // The slow configuration is still working through its backlog: delayed, not failed.
    expect(waiting.n).toBeGreaterThan(10);
    const [failed] = await apps.dataSource.query(`SELECT count(*)::int AS n FROM workflow_runs WHERE id = ANY($1) AND status = 'failed'`, [backlog]);
    expect(failed.n).toBe(0);
  });

  it("gives a canceled campaign's reserved instants back once none of its runs is queued, so the next call is not paced behind them", async () => {
    const org = await createOrganization(apps.dataSource);
    const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 10, talk_ms: 10 }, callsPerSecond: 0.5 });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
    const fire = async () =>
      (await apps.client.post(`/api/v1/public/agent/${workflow.triggerUuid}`, { phone_number: '+14155550100' }, { key: org.adminKey })).body
        .workflow_run_id as number;
    const canceledQueued: number[] = [];
    const cancel = async (runIds: number[]) => {
      for (const runId of runIds) {
        const response = await apps.client.post(`/api/v1/workflow/${workflow.workflowId}/runs/${runId}/cancel`, undefined, { key: org.adminKey });
        // 202 or 409: its instant came, and it is being dialed or was.
        expect([200, 202, 409]).toContain(response.status);
        if (response.status === 200) canceledQueued.push(runId);
      }
    };
    const redis = apps.api.get(RedisClient).redis;
    const paceKey = apps.api.get(PacingInstants).key(config.id);
    /** How far ahead of now (Redis' clock) the configuration's next free instant is; 0 when none is reserved. */
    const reservedAheadMs = async () => {
      const [[, reserved], [, [seconds, micros]]] = (await redis.multi().get(paceKey).time().exec()) as [[null, string | null], [null, [string, string]]];
      return reserved === null ? 0 : Math.max(0, Number(reserved) - (Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)));
    };

    // A campaign of 10 calls at one every 2 s: once its jobs are admitted, the instants are reserved up to 20 s ahead.
    const campaign: number[] = [];
    for (let i = 0; i < 10; i++) campaign.push(await fire());
    await waitFor(async () => ((await reservedAheadMs()) > 15_000 ? true : undefined), { what: "the campaign's jobs to reserve their instants" });

    // Half of it canceled: the rest is still queued, waiting for its instants, which are kept.
    await cancel(campaign.slice(5));
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(await reservedAheadMs()).toBeGreaterThan(10_000);

    // The rest canceled too: nothing is queued, and the instants are given back.
    await cancel(campaign.slice(1, 5));
    await waitFor(async () => ((await reservedAheadMs()) < 2_000 ? true : undefined), { what: 'the instants to be given back', timeoutMs: 5_000 });
    // The canceled runs' jobs, waiting for their instants, are dropped.
    const queue = apps.api.get<Queue>(getQueueToken(QueueName.Calls));
    expect(canceledQueued.length).toBeGreaterThanOrEqual(5);
    expect(await Promise.all(canceledQueued.map((runId) => queue.getJob(placeCallJobId(runId))))).toEqual(canceledQueued.map(() => undefined));
    const triggered = Date.now();
    const next = await fire();
    await runsWhenComplete(apps.dataSource, [next], 10_000);

    const [firstDial] = await dialTimes(apps, [campaign[0]]);
    const [nextDial] = await dialTimes(apps, [next]);
    // Dialed at once (behind the campaign's instants it would have waited about 20 s), the rate still held.
    expect(nextDial - triggered).toBeLessThan(4_000);
    const dialed = await dialTimes(apps, [...campaign, next]);
    // Two seconds apart by their instants; the ledger's clock runs some milliseconds after, unevenly. Only a broken
    // window would put two dials near each other.
    for (let index = 1; index < dialed.length; index++) expect(dialed[index] - dialed[index - 1]).toBeGreaterThan(1_000);
    expect(nextDial).toBeGreaterThan(firstDial);
  });
});

describe('calls_per_second when reserved pacing instants come due together', () => {
  let apps: TestApps;

  beforeAll(async () => {
    // No dialer yet: the jobs are set up as if each had waited for its instant, then one dialer takes them all at once.
    apps = await startTestApps({ dialer: false, env: { DIALER_CONCURRENCY: '10' } });
  });
  afterAll(() => apps.close());

  it('never dials more than calls_per_second in any rolling second, even for jobs whose instants all came due', async () => {
    const org = await createOrganization(apps.dataSource);
    const cps = 2;
    await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 10, talk_ms: 10 }, callsPerSecond: cps });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
    const runIds: number[] = [];
    for (let i = 0; i < 6; i++) {
      const response = await apps.client.post(`/api/v1/public/agent/${workflow.triggerUuid}`, { phone_number: '+14155550100' }, { key: org.adminKey });
      runIds.push(response.body.workflow_run_id);
    }
    // Each job holds a reserved instant, as a delayed job does when it comes back behind a backlog: none waits for pacing again.
    const queue = apps.api.get<Queue>(getQueueToken(QueueName.Calls));
    const slotAt = Date.now() + 5000;
    for (const runId of runIds) {
      const job = await queue.getJob(placeCallJobId(runId));
      await job!.updateData({ ...job!.data, slotAt });
    }
    await apps.addDialer();
    await runsWhenComplete(apps.dataSource, runIds, 30000);

    const times = await dialTimes(apps, runIds);
    expect(times).toHaveLength(6);
    // The ledger's clock runs some milliseconds after the admission's, unevenly under load: a 700 ms window leaves
    // 300 ms for that (a dial that late sits closer to the next on time) and still catches a burst (all six at once
    // without the rolling window) or twice the rate (three dials 250 ms apart).
    for (const start of times) {
      expect(times.filter((time) => time >= start && time < start + 700).length).toBeLessThanOrEqual(cps);
    }
    expect(times[times.length - 1] - times[0]).toBeGreaterThan(1800);
  });
});
