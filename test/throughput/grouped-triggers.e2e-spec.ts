import { agentGraph, createOrganization, runsWhenComplete, sandboxDialsByRun, seedSandboxConfiguration, seedWorkflow, TestOrganization } from '../support/fixtures';
import { expectError } from '../support/public-api-helpers';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

/**
 * The gateway groups concurrent triggers into one INSERT and one enqueue, and
 * serves trigger and configuration look-ups from memory for a bounded time.
 * Neither may change what a caller sees: each request its own run, each run
 * one call, and a change seen within LOOKUP_CACHE_TTL_MS on every replica.
 */
describe('grouped triggers and cached look-ups', () => {
  const TTL_MS = 800;
  let apps: TestApps;
  let org: TestOrganization;
  let uuid: string;
  let configId: number;

  beforeAll(async () => {
    apps = await startTestApps({ env: { LOOKUP_CACHE_TTL_MS: String(TTL_MS) } });
    org = await createOrganization(apps.dataSource);
    configId = (await seedSandboxConfiguration(apps.dataSource, org.organizationId, { settings: { ring_ms: 0, talk_ms: 0 } })).id;
    uuid = (await seedWorkflow(apps.dataSource, org.organizationId, { published: (id) => agentGraph(id) })).triggerUuid;
  });
  afterAll(() => apps.close());

  const numberFor = (index: number) => `+1415555${String(1000 + index).padStart(4, '0')}`;
  const trigger = (index: number, headers: Record<string, string> = {}) =>
    apps.client.post(
      `/api/v1/public/agent/${uuid}`,
      { phone_number: numberFor(index), initial_context: { index } },
      { key: org.adminKey, headers },
    );

  it('gives each of many concurrent requests its own stored run, and dials each once', async () => {
    const responses = await Promise.all(Array.from({ length: 80 }, (_, index) => trigger(index)));
    expect(responses.map((response) => response.status)).toEqual(responses.map(() => 200));
    const runIds = responses.map((response) => response.body.workflow_run_id as number);
    expect(new Set(runIds).size).toBe(80);

    // Each answer names the run made from that request's body, not a neighbour's in the same statement.
    const rows: Array<{ id: number; phone_number: string; initial_context: { index: number } }> = await apps.dataSource.query(
      `SELECT id, phone_number, initial_context FROM workflow_runs WHERE id = ANY($1)`,
      [runIds],
    );
    const byId = new Map(rows.map((row) => [row.id, row]));
    runIds.forEach((runId, index) => {
      expect(byId.get(runId)?.phone_number).toBe(numberFor(index));
      expect(byId.get(runId)?.initial_context).toEqual({ index });
    });

    await runsWhenComplete(apps.dataSource, runIds, 60_000);
    const dials = await sandboxDialsByRun(apps.dataSource, runIds);
    expect([...dials.values()].every((count) => count === 1)).toBe(true);
  });

  it('records each concurrent Idempotency-Key with its own run, and replays every one of them', async () => {
    const keys = Array.from({ length: 40 }, (_, index) => `grouped-${Date.now()}-${index}`);
    const first = await Promise.all(keys.map((key, index) => trigger(100 + index, { 'idempotency-key': key })));
    expect(first.map((response) => response.status)).toEqual(keys.map(() => 200));
    const runIds = first.map((response) => response.body.workflow_run_id as number);
    expect(new Set(runIds).size).toBe(40);

    const stored: Array<{ key: string; run_id: number }> = await apps.dataSource.query(
      `SELECT key, run_id FROM idempotency_keys WHERE organization_id = $1 AND key = ANY($2)`,
      [org.organizationId, keys],
    );
    expect(new Map(stored.map((row) => [row.key, row.run_id]))).toEqual(new Map(keys.map((key, index) => [key, runIds[index]])));

    const repeats = await Promise.all(keys.map((key, index) => trigger(100 + index, { 'idempotency-key': key })));
    repeats.forEach((response, index) => {
      expect(response.status).toBe(200);
      expect(response.headers.get('idempotent-replayed')).toBe('true');
      expect(response.body.workflow_run_id).toBe(runIds[index]);
    });
  });

  it("sees another replica's deactivation of the trigger within LOOKUP_CACHE_TTL_MS", async () => {
    expect((await trigger(200)).status).toBe(200);
    // Written straight to the database, as another replica's API would: this replica only learns by expiry.
    await apps.dataSource.query(`UPDATE api_triggers SET is_active = false WHERE uuid = $1`, [uuid]);
    const changedAt = Date.now();
    try {
      await waitFor(async () => ((await trigger(201)).status === 404 ? true : undefined), {
        timeoutMs: TTL_MS + 2000,
        intervalMs: 50,
        what: 'the deactivated trigger to answer 404',
      });
      expect(Date.now() - changedAt).toBeLessThan(TTL_MS + 500);
      expectError(await trigger(202), 404, 'trigger_not_found');
    } finally {
      await apps.dataSource.query(`UPDATE api_triggers SET is_active = true WHERE uuid = $1`, [uuid]);
      // The reactivation is seen the same way: by expiry.
      await waitFor(async () => ((await trigger(203)).status === 200 ? true : undefined), {
        timeoutMs: TTL_MS + 2000,
        intervalMs: 50,
        what: 'the reactivated trigger to answer 200',
      });
    }
  });

  it("sees another replica's change to the configuration within LOOKUP_CACHE_TTL_MS", async () => {
    expect((await trigger(300)).status).toBe(200);
    await apps.dataSource.query(`UPDATE telephony_configurations SET from_numbers = '{}' WHERE id = $1`, [configId]);
    try {
      await waitFor(async () => ((await trigger(301)).status === 400 ? true : undefined), {
        timeoutMs: TTL_MS + 2000,
        intervalMs: 50,
        what: 'the configuration without from number to answer 400',
      });
      const refused = await trigger(302);
      expectError(refused, 400, 'telephony_not_configured');
      expect(refused.body.message).toContain('from_numbers');
    } finally {
      await apps.dataSource.query(`UPDATE telephony_configurations SET from_numbers = '{+15005550006}' WHERE id = $1`, [configId]);
      await waitFor(async () => ((await trigger(303)).status === 200 ? true : undefined), {
        timeoutMs: TTL_MS + 2000,
        intervalMs: 50,
        what: 'the restored configuration to be used again',
      });
    }
  });

  it("applies this replica's own changes at once", async () => {
    const off = await apps.client.patch(`/api/v1/triggers/${uuid}`, { is_active: false }, { key: org.adminKey });
    expect(off.status).toBe(200);
    expectError(await trigger(400), 404, 'trigger_not_found');
    await apps.client.patch(`/api/v1/triggers/${uuid}`, { is_active: true }, { key: org.adminKey });
    expect((await trigger(401)).status).toBe(200);

    // A configuration may be left without from numbers (calls through it then answer 400), and this replica's
    // triggers see that, and the numbers given back, without waiting for their cache to expire.
    let restoredStatus: number | undefined;
    const emptied = await apps.client.patch(`/api/v1/telephony-configurations/${configId}`, { from_numbers: [] }, { key: org.adminKey });
    try {
      expect(emptied.status).toBe(200);
      expectError(await trigger(402), 400, 'telephony_not_configured');
    } finally {
      restoredStatus = (await apps.client.patch(`/api/v1/telephony-configurations/${configId}`, { from_numbers: ['+15005550006'] }, { key: org.adminKey })).status;
    }
    expect(restoredStatus).toBe(200);
    expect((await trigger(403)).status).toBe(200);
  });
});
