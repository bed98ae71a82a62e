import { DialAdmission } from '../../apps/dialer/src/pacing/dial-admission';
import { agentGraph, createOrganization, seedSandboxConfiguration, seedWorkflow } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A campaign's dials reserve their pacing instants as they are taken up, at
 * the configuration's `calls_per_second` then. Lowered under them, the rate
 * window lets out far fewer dials than hold instants: the rest must be paced
 * again at the new rate, not ask the window again every time it has room.
 */
describe('calls_per_second lowered under a campaign', () => {
  let apps: TestApps;

  beforeAll(async () => {
    // Configurations read afresh on every dial, so the change reaches the dialer at once.
    apps = await startTestApps({ env: { LOOKUP_CACHE_TTL_MS: '0' } });
  });
  afterAll(() => apps.close());

  it('paces the reserved dials again at the lowered rate instead of having them poll the rate window', async () => {
    const org = await createOrganization(apps.dataSource);
    const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId, {
      settings: { ring_ms: 10, talk_ms: 10 },
      callsPerSecond: 10,
      maxConcurrentCalls: 1000,
    });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (uuid) => agentGraph(uuid) });

    const admission = apps.dialer!.get(DialAdmission);
    const original = admission.admit.bind(admission);
    const asked: Array<{ at: number; kind: string }> = [];
    jest.spyOn(admission, 'admit').mockImplementation(async (...args) => {
      const answer = await original(...args);
      asked.push({ at: Date.now(), kind: answer.kind });
      return answer;
    });

    // 120 calls at 10 a second: their instants reach twelve seconds ahead once their jobs are taken up.
    const runIds: number[] = [];
    for (let batch = 0; batch < 12; batch++) {
      const responses = await Promise.all(
        Array.from({ length: 10 }, () =>
          apps.client.post(`/api/v1/public/agent/${workflow.triggerUuid}`, { phone_number: '+14155550100', telephony_configuration_id: config.id }, { key: org.adminKey }),
        ),
      );
      for (const response of responses) {
        expect(response.status).toBe(200);
        runIds.push(response.body.workflow_run_id);
      }
    }
    const dialed = async () => (await apps.dataSource.query(`SELECT count(*)::int AS n FROM sandbox_calls WHERE run_id = ANY($1)`, [runIds]))[0].n as number;
    await waitFor(async () => ((await dialed()) >= 5 ? true : undefined), { what: 'the campaign to start dialing' });

    const lowered = await apps.client.patch(`/api/v1/telephony-configurations/${config.id}`, { calls_per_second: 1 }, { key: org.adminKey });
    expect(lowered.status).toBe(200);
    const loweredAt = Date.now();
    // What the test is about: most of the campaign still holds instants reserved at 10 a second.
    expect(120 - (await dialed())).toBeGreaterThan(60);

    // Past the instants reserved at 10 a second (and two refusals each), every dial still waiting holds an instant at
    // one a second. Asked again on each room in the window instead, about a hundred dials would each ask once a second.
    await sleep(14_000);
    const from = Date.now();
    await sleep(5_000);
    const until = Date.now();
    const askedMeanwhile = asked.filter((ask) => ask.at >= from && ask.at < until);
    const refused = askedMeanwhile.filter((ask) => ask.kind === 'rate').length;
    // About five dials go out in five seconds at one a second; each is one admission, and a paced one that comes back
    // may meet a late dial's count once.
    expect(askedMeanwhile.length).toBeLessThan(25);
    expect(refused).toBeLessThan(10);

    // What the carrier saw once the instants reserved before the change had passed: one dial a second.
    const times: number[] = (
      await apps.dataSource.query(`SELECT extract(epoch FROM created_at) * 1000 AS at FROM sandbox_calls WHERE run_id = ANY($1) ORDER BY created_at`, [
        runIds,
      ])
    )
      .map((row: { at: string }) => Number(row.at))
      .filter((at: number) => at >= loweredAt + 13_000);
    expect(times.length).toBeGreaterThanOrEqual(4);
    // The ledger writes a dial some milliseconds after its admission, unevenly on a busy machine: two may fall in a second.
    const busiest = Math.max(...times.map((start) => times.filter((time) => time >= start && time < start + 1000).length));
    expect(busiest).toBeLessThanOrEqual(2);

    // Nothing was lost: the runs not dialed yet are queued, waiting for their instants, and none failed.
    const statuses: Array<{ status: string; n: number }> = await apps.dataSource.query(
      `SELECT status, count(*)::int AS n FROM workflow_runs WHERE id = ANY($1) GROUP BY status`,
      [runIds],
    );
    const counts = Object.fromEntries(statuses.map((row) => [row.status, row.n]));
    expect(Object.keys(counts).filter((status) => !['queued', 'dialing', 'ringing', 'in_progress', 'completed'].includes(status))).toEqual([]);
    expect(counts.queued).toBeGreaterThan(0);
  }, 90_000);
});
