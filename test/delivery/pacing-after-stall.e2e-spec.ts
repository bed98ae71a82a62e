import { DIAL_LATE_MS } from '../../apps/dialer/src/calls/call-placer.service';
import { agentGraph, createOrganization, runsWhenComplete, seedSandboxConfiguration, seedWorkflow } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

/**
 * Dials are paced when they are admitted, and claimed in Postgres after.
 * A database that stops answering for a few seconds (a lock, a checkpoint,
 * a failover) holds every claim back while the dialer goes on admitting
 * dials at the configuration's pace: once it answers, they must not all
 * reach the carrier together.
 */
describe('pacing after the database held dials back', () => {
  let apps: TestApps;

  beforeAll(async () => {
    // Enough connections that the claims held back do not take them all: the dialer then goes on admitting dials
    // through the stall, as it does when the stall is the database's as a whole (a failover) rather than a lock.
    apps = await startTestApps({ env: { DATABASE_POOL_SIZE: '40' } });
  });
  afterAll(() => apps.close());

  it('paces again the dials held back past DIAL_LATE_MS, rather than sending them together, and dials every run once', async () => {
    const org = await createOrganization(apps.dataSource);
    const cps = 4;
    const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId, {
      settings: { ring_ms: 10, talk_ms: 10 },
      callsPerSecond: cps,
      maxConcurrentCalls: 100,
    });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });
    const runIds: number[] = [];
    for (let i = 0; i < 24; i++) {
      const response = await apps.client.post(`/api/v1/public/agent/${workflow.triggerUuid}`, { phone_number: '+14155550100', telephony_configuration_id: config.id }, { key: org.adminKey });
      expect(response.status).toBe(200);
      runIds.push(response.body.workflow_run_id);
    }
    const dialed = async () =>
      (await apps.dataSource.query(`SELECT count(*)::int AS n FROM sandbox_calls WHERE run_id = ANY($1)`, [runIds]))[0].n as number;
    await waitFor(async () => ((await dialed()) >= 2 ? true : undefined), { what: 'the campaign to start dialing' });

    // Every queued run's row held for five seconds: the dialer's claims wait on it, its admissions go on at the pace.
    const holder = apps.dataSource.createQueryRunner();
    await holder.connect();
    try {
      await holder.startTransaction();
      await holder.query(`SELECT id FROM workflow_runs WHERE id = ANY($1) AND status = 'queued' FOR UPDATE`, [runIds]);
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      await holder.commitTransaction();
    } finally {
      await holder.release();
    }
    await runsWhenComplete(apps.dataSource, runIds, 60_000);

    // Each run dialed once, and every one of them completed.
    const perRun: Array<{ run_id: string; n: number }> = await apps.dataSource.query(
      `SELECT run_id, count(*)::int AS n FROM sandbox_calls WHERE run_id = ANY($1) GROUP BY run_id`,
      [runIds],
    );
    expect(perRun).toHaveLength(runIds.length);
    expect(perRun.every((row) => row.n === 1)).toBe(true);
    const statuses: Array<{ status: string }> = await apps.dataSource.query(`SELECT status FROM workflow_runs WHERE id = ANY($1)`, [runIds]);
    expect(statuses.every((row) => row.status === 'completed')).toBe(true);

    // The stall held dials past DIAL_LATE_MS: they were paced again, not sent.
    const [{ late }] = await apps.dataSource.query(
      `SELECT count(*)::int AS late FROM workflow_runs, jsonb_array_elements(logs->'events') AS entry
        WHERE id = ANY($1) AND entry->>'event' = 'dialer.dial_late'`,
      [runIds],
    );
    expect(late).toBeGreaterThan(0);

    // What the carrier saw: no second with more than the dials admitted within DIAL_LATE_MS before the database answered
    // (held, then sent together) and those paced in the second after. Sent together, the stall's five seconds of
    // admissions (about twenty) reached it at once.
    const times: number[] = (
      await apps.dataSource.query(`SELECT extract(epoch FROM created_at) * 1000 AS at FROM sandbox_calls WHERE run_id = ANY($1) ORDER BY created_at`, [
        runIds,
      ])
    ).map((row: { at: string }) => Number(row.at));
    const busiest = Math.max(...times.map((start) => times.filter((time) => time >= start && time < start + 1000).length));
    expect(busiest).toBeLessThanOrEqual(Math.ceil((cps * DIAL_LATE_MS) / 1000) + cps + 1);
  }, 90_000);
});
