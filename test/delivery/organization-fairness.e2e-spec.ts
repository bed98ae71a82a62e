import { getQueueToken } from '@nestjs/bullmq';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Queue } from 'bullmq';
import { DialBacklogs, QueueName, RedisClient } from '@app/queue';
import { PlaceCallProcessor } from '../../apps/dialer/src/calls/place-call.processor';
import { agentGraph, createOrganization, runsWhenComplete, seedSandboxConfiguration, seedWorkflow, TestOrganization } from '../support/fixtures';
import { runPath, startCall } from '../support/public-api-helpers';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

interface Caller {
  org: TestOrganization;
  triggerUuid: string;
  workflowId: number;
}

describe('fairness between organizations on the shared dial queue', () => {
  let apps: TestApps;
  let dialer: NestFastifyApplication | undefined;

  // No dialer at first: each test builds a backlog, then starts one.
  beforeAll(async () => {
    apps = await startTestApps({ dialer: false });
  });
  afterAll(() => apps.close());

  /** An organization with a sandbox configuration, unpaced unless told (calls_per_second far above what one dialer places). */
  async function caller(callsPerSecond = 10_000): Promise<Caller> {
    const org = await createOrganization(apps.dataSource);
    await seedSandboxConfiguration(apps.dataSource, org.organizationId, {
      settings: { ring_ms: 10, talk_ms: 10 },
      callsPerSecond,
      maxConcurrentCalls: 1_000,
    });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
    return { org, triggerUuid: workflow.triggerUuid, workflowId: workflow.workflowId };
  }

  /** Triggers one after another, so each organization's runs are enqueued in the order of their ids. */
  async function triggers(from: Caller, count: number): Promise<number[]> {
    const runIds: number[] = [];
    for (let i = 0; i < count; i++) {
      runIds.push(await startCall(apps.client, from.triggerUuid, { phone_number: '+14155550100' }, { key: from.org.adminKey }));
    }
    return runIds;
  }

  /** Jobs of the organization counted in its backlog and not yet taken up, whatever their band. */
  async function backlogOf(from: Caller): Promise<number> {
    const counts = await apps.api.get(RedisClient).redis.hgetall(apps.api.get(DialBacklogs).key(from.org.organizationId));
    return Object.entries(counts).reduce((sum, [field, count]) => (field.startsWith('at:') ? sum : sum + Number(count)), 0);
  }

  it("counts a canceled queued run's job out of its organization's backlog", async () => {
    const from = await caller();
    const runIds = await triggers(from, 3);
    expect(await backlogOf(from)).toBe(3);
    for (const [index, runId] of runIds.entries()) {
      const response = await apps.client.post(`${runPath(from.workflowId, runId)}/cancel`, undefined, { key: from.org.adminKey });
      expect(response.status).toBe(200);
      await waitFor(async () => ((await backlogOf(from)) === 2 - index ? true : undefined), { what: 'the job to be counted out' });
    }
  });

  it("dials another organization's call before a campaign enqueued ahead of it, and shares the dialer between two campaigns", async () => {
    const [a, b, c] = [await caller(), await caller(), await caller()];
    const campaignA = await triggers(a, 40);
    const campaignB = await triggers(b, 40);
    const [single] = await triggers(c, 1);
    expect(await backlogOf(a)).toBe(40);

    // One dialer taking one job at a time: the order of the dials is the order the queue hands the jobs out.
    dialer = await apps.addDialer({ DIALER_CONCURRENCY: '1' });
    const all = [...campaignA, ...campaignB, single];
    await runsWhenComplete(apps.dataSource, all, 60_000);
    const dials: Array<{ run_id: string }> = await apps.dataSource.query(
      'SELECT run_id FROM sandbox_calls WHERE run_id = ANY($1) ORDER BY created_at',
      [all],
    );
    const order = dials.map((dial) => Number(dial.run_id));
    expect([...order].sort((x, y) => x - y)).toEqual([...all].sort((x, y) => x - y));

    // Each organization's first call is band 1: the single call goes right after the two campaigns' first ones.
    expect(order.indexOf(single)).toBeLessThanOrEqual(2);
    // Both campaigns move together: bands 1 to 4 hold each one's first 15 calls.
    const first40 = order.slice(0, 40);
    expect(first40.filter((runId) => campaignB.includes(runId)).length).toBeGreaterThanOrEqual(15);
    expect(first40.filter((runId) => campaignA.includes(runId)).length).toBeGreaterThanOrEqual(15);
    // Within an organization the calls keep the order they were triggered in.
    expect(order.filter((runId) => campaignA.includes(runId))).toEqual(campaignA);
    expect(order.filter((runId) => campaignB.includes(runId))).toEqual(campaignB);

    // Every job taken up was counted out of its backlog.
    for (const from of [a, b, c]) {
      await waitFor(async () => ((await backlogOf(from)) === 0 ? true : undefined), { what: 'the backlogs to empty' });
    }
  });

  it("dials a paced campaign's first calls at their instants while the dialer is still taking up its later ones", async () => {
    // Each job of a paced campaign reserves its instant on its first pass and waits for it delayed. A job due while
    // the first passes of later ones are still waiting must not queue behind them: more than a second late, it would
    // give its instant up and reserve one after the whole campaign's.
    const from = await caller(10);
    // Many jobs at once, as a dialer takes them: one at a time, each would wait in place for its instant and the
    // next would find the following one near, never delayed. The earlier dialer is stopped, not paused: a paused
    // worker may still take a job its fetch was waiting for, and hold it.
    if (dialer) await dialer.close();
    dialer = undefined;
    const placer = (await apps.addDialer({ DIALER_CONCURRENCY: '50' })).get(PlaceCallProcessor).worker;
    await placer.pause(true);
    const runIds: number[] = [];
    const size = 4000;
    for (let start = 0; start < size; start += 100) {
      const batch = Array.from({ length: Math.min(100, size - start) }, () =>
        startCall(apps.client, from.triggerUuid, { phone_number: '+14155550100' }, { key: from.org.adminKey }),
      );
      runIds.push(...(await Promise.all(batch)));
    }
    const firstCalls = [...runIds].sort((x, y) => x - y).slice(0, 20);
    await placer.resume();
    try {
      // At 10 calls a second the first 20 are due within 2 s of the first dial, while the dialer still takes up the
      // campaign's later jobs (seconds of them here). One that lost its instant would go out after the other 3,980
      // calls, minutes later: the first 20 must be among the campaign's first 100 dials.
      const lastOfThem = await waitFor(
        async () => {
          const [row]: Array<{ dialed: string; last: Date }> = await apps.dataSource.query(
            'SELECT count(*) AS dialed, max(created_at) AS last FROM sandbox_calls WHERE run_id = ANY($1)',
            [firstCalls],
          );
          return Number(row.dialed) === firstCalls.length ? row.last : undefined;
        },
        { timeoutMs: 30_000, what: "the campaign's first 20 calls to be dialed" },
      );
      const [{ before }]: Array<{ before: string }> = await apps.dataSource.query(
        'SELECT count(*) AS before FROM sandbox_calls WHERE run_id = ANY($1) AND created_at <= $2',
        [runIds, lastOfThem],
      );
      expect(Number(before)).toBeLessThanOrEqual(100);
    } finally {
      // The rest of the campaign is not this test's: cancel it, and drop its jobs.
      await placer.pause(true);
      await apps.dataSource.query(
        `UPDATE workflow_runs SET status = 'canceled', end_reason = 'canceled', ended_at = now(), is_completed = true
          WHERE id = ANY($1) AND status = 'queued'`,
        [runIds],
      );
      await apps.api.get<Queue>(getQueueToken(QueueName.Calls)).drain(true);
      await placer.resume();
    }
  }, 60_000);
});
