import { placeCallJobId, QueueName, RedisClient } from '@app/queue';
import { RunDispatcher } from '../../apps/dialer/src/recovery/run-dispatcher.service';
import { createIsolatedResources, IsolatedResources } from '../support/isolated-resources';
import { startTestAppsWithPausedWorkers, TestApps } from '../support/test-apps';

/**
 * The dispatcher's full sweep over a backlog of queued runs whose jobs were
 * lost (Redis' data gone): every one found, a page at a time, though
 * thousands share one `status_changed_at` (a group insert stores them with
 * one `now()`), across the pages' edges.
 */
describe('run dispatcher: full sweep', () => {
  let apps: TestApps;
  let own: IsolatedResources;

  beforeAll(async () => {
    own = await createIsolatedResources('sweep');
    // Rounds by hand only (the one at start sweeps an empty table, and the task is stopped); jobs enqueued are left waiting.
    apps = await startTestAppsWithPausedWorkers({ ...own.env, DISPATCH_INTERVAL_MS: '60000' });
    await apps.dialer!.get(RunDispatcher).onApplicationShutdown();
  });
  afterAll(async () => {
    try {
      await apps?.close();
    } finally {
      await own.drop();
    }
  });

  it('enqueues every settled queued run without a job, once, through ties on status_changed_at across pages', async () => {
    // 2,300 queued runs stored by one statement (one timestamp), 700 by another a second later, 500 finished ones
    // between, and 50 queued runs not settled (dated a minute ahead, so they stay so however long the sweeps take).
    const insert = (count: number, status: string, ago: string) =>
      apps.dataSource.query(
        `INSERT INTO workflow_runs (name, status, organization_id, workflow_id, environment, phone_number, is_completed, status_changed_at)
         SELECT 'WR-sweep-' || n, $2, 1, 1, 'production', '+14155550100', $2 <> 'queued', now() - $3::interval
           FROM generate_series(1, $1) AS n RETURNING id`,
        [count, status, ago],
      ) as Promise<Array<{ id: string }>>;
    const queued = [...(await insert(2_300, 'queued', '20 seconds')), ...(await insert(700, 'queued', '19 seconds'))].map((row) => Number(row.id));
    await insert(500, 'completed', '19 seconds');
    const young = (await insert(50, 'queued', '-1 minute')).map((row) => Number(row.id));

    const dispatcher = apps.dialer!.get(RunDispatcher) as unknown as { sweep(): Promise<number> };
    // Sweeping as it does after Redis lost its data.
    expect(await dispatcher.sweep()).toBe(3_000);

    const client = apps.dialer!.get(RedisClient);
    const jobOf = async (runIds: number[]) => {
      const pipeline = client.redis.pipeline();
      for (const runId of runIds) pipeline.hget(`${client.keyFor(QueueName.Calls)}:${placeCallJobId(runId)}`, 'name');
      return ((await pipeline.exec()) ?? []).map(([, name]) => name);
    };
    expect(new Set(await jobOf(queued))).toEqual(new Set(['place-call']));
    expect(new Set(await jobOf(young))).toEqual(new Set([null]));
    // Swept again: nothing is missing.
    expect(await dispatcher.sweep()).toBe(0);
  });
});
