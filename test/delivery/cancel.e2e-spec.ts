import { connect, createServer, Server, Socket } from 'node:net';
import { TelephonyConfiguration, WorkflowRunStore } from '@app/persistence';
import { TelnyxFake } from '../fakes/telnyx-fake';
import { TwilioFake } from '../fakes/twilio-fake';
import {
  agentGraph,
  createOrganization,
  sandboxDialsByRun,
  seedSandboxConfiguration,
  seedWorkflow,
  SeededWorkflow,
  TestOrganization,
} from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

describe('POST /api/v1/workflow/{workflow_id}/runs/{run_id}/cancel', () => {
  let apps: TestApps;
  let org: TestOrganization;

  beforeAll(async () => {
    apps = await startTestApps();
    org = await createOrganization(apps.dataSource);
  });
  afterAll(() => apps.close());

  async function agent(settings: Record<string, unknown>, callsPerSecond = 100) {
    const config = await seedSandboxConfiguration(apps.dataSource, org.organizationId, {
      settings,
      callsPerSecond,
      isDefaultOutbound: false,
    });
    const workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (id) => agentGraph(id) });
    const trigger = async () =>
      (
        await apps.client.post(
          `/api/v1/public/agent/${workflow.triggerUuid}`,
          { phone_number: '+14155550100', telephony_configuration_id: config.id },
          { key: org.adminKey },
        )
      ).body.workflow_run_id as number;
    const runPath = (runId: number) => `/api/v1/workflow/${workflow.workflowId}/runs/${runId}`;
    return { trigger, runPath, workflowId: workflow.workflowId };
  }

  it('cancels a run still waiting for its pacing slot, and it is never dialed', async () => {
    // At 0.5 calls per second the second run waits about 2 s for its slot.
    const { trigger, runPath } = await agent({ ring_ms: 10, talk_ms: 10 }, 0.5);
    await trigger();
    const waiting = await trigger();
    const response = await apps.client.post(`${runPath(waiting)}/cancel`, undefined, { key: org.adminKey });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ status: 'canceled', end_reason: 'canceled', is_completed: true });
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect((await sandboxDialsByRun(apps.dataSource, [waiting])).get(waiting)).toBe(0);
    expect((await apps.client.get(runPath(waiting), { key: org.adminKey })).body.status).toBe('canceled');

    // Asked again (the first answer lost): answered as canceled, the record as it was.
    const again = await apps.client.post(`${runPath(waiting)}/cancel`, undefined, { key: org.adminKey });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(response.body);
  });

  it('hangs up a ringing call through the carrier and ends the run canceled', async () => {
    const { trigger, runPath } = await agent({ ring_ms: 4000, talk_ms: 100 });
    const runId = await trigger();
    await waitFor(async () => ((await apps.client.get(runPath(runId), { key: org.adminKey })).body.status === 'ringing' ? true : undefined));
    const response = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey });
    expect(response.status).toBe(202);
    const run = await waitFor(async () => {
      const current = (await apps.client.get(runPath(runId), { key: org.adminKey })).body;
      return current.is_completed ? current : undefined;
    });
    expect(run).toMatchObject({ status: 'canceled', answered_at: null });
  });

  it('answers 202 for a hang-up the carrier took even when its note in the run log cannot be stored', async () => {
    const { trigger, runPath } = await agent({ ring_ms: 4000, talk_ms: 100 });
    const runId = await trigger();
    await waitFor(async () => ((await apps.client.get(runPath(runId), { key: org.adminKey })).body.status === 'ringing' ? true : undefined));
    const store = apps.api.get(WorkflowRunStore);
    const note = jest.spyOn(store, 'appendEvent').mockRejectedValueOnce(new Error('the database went away'));
    try {
      const response = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey });
      expect(response.status).toBe(202);
      expect(note).toHaveBeenCalledWith(runId, 'api.hangup_requested');
    } finally {
      note.mockRestore();
    }
    const run = await waitFor(async () => {
      const current = (await apps.client.get(runPath(runId), { key: org.adminKey })).body;
      return current.is_completed ? current : undefined;
    });
    expect(run).toMatchObject({ status: 'canceled', answered_at: null });
  });

  it('answers 409 for a call that was already answered or finished', async () => {
    const { trigger, runPath } = await agent({ ring_ms: 10, talk_ms: 10 });
    const runId = await trigger();
    const finished = await waitFor(async () => {
      const current = (await apps.client.get(runPath(runId), { key: org.adminKey })).body;
      return current.is_completed ? current : undefined;
    });
    expect(finished.status).toBe('completed');
    const response = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey });
    expect(response.status).toBe(409);
    expect(response.body.code).toBe('run_not_cancelable');
    // The finished run is left as it ended (its artifacts may still arrive).
    const after = (await apps.client.get(runPath(runId), { key: org.adminKey })).body;
    const ending = (run: Record<string, unknown>) => ({ status: run.status, end_reason: run.end_reason, ended_at: run.ended_at });
    expect(ending(after)).toEqual(ending(finished));
  });

  it('answers 409 saying so for a ringing call whose configuration no longer exists, not that it was answered', async () => {
    const { trigger, runPath } = await agent({ ring_ms: 4000, talk_ms: 100 });
    const runId = await trigger();
    await waitFor(async () => ((await apps.client.get(runPath(runId), { key: org.adminKey })).body.status === 'ringing' ? true : undefined));
    // As one deleted before deleting a configuration with unfinished runs was refused.
    const [{ telephony_configuration_id: configId }] = await apps.dataSource.query(
      'SELECT telephony_configuration_id FROM workflow_runs WHERE id = $1',
      [runId],
    );
    await apps.dataSource.getRepository(TelephonyConfiguration).delete({ id: configId });

    const response = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey });
    expect(response.status).toBe(409);
    expect(response.body).toMatchObject({ code: 'run_not_cancelable', message: expect.stringContaining('no longer exists') });
  });

  it("answers 404 under another of the organization's workflows, 403 to a key limited to other agents, and cancels nothing", async () => {
    // At 0.5 calls per second the second run stays queued for about 2 s.
    const { trigger, runPath } = await agent({ ring_ms: 10, talk_ms: 10 }, 0.5);
    const other = await agent({ ring_ms: 10, talk_ms: 10 });
    await trigger();
    const runId = await trigger();
    const underOther = await apps.client.post(`/api/v1/workflow/${other.workflowId}/runs/${runId}/cancel`, undefined, { key: org.adminKey });
    expect({ status: underOther.status, code: underOther.body.code }).toEqual({ status: 404, code: 'run_not_found' });
    const limited = await apps.client.post(
      '/api/v1/api-keys',
      { name: 'the other agent only', role: 'trigger', workflow_ids: [other.workflowId] },
      { key: org.adminKey },
    );
    expect(limited.status).toBe(201);
    const refused = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: limited.body.key });
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 403, code: 'forbidden' });
    expect((await apps.client.get(runPath(runId), { key: org.adminKey })).body.status).not.toBe('canceled');
  });

  it('answers 404 for a run of another organization', async () => {
    const { trigger, runPath } = await agent({ ring_ms: 10, talk_ms: 10 }, 0.5);
    const runId = await trigger();
    const other = await createOrganization(apps.dataSource);
    const response = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: other.adminKey });
    expect(response.status).toBe(404);
    expect((await apps.client.get(runPath(runId), { key: org.adminKey })).body.status).not.toBe('canceled');
  });
});

/**
 * A carrier's API behind a door on loopback that the test opens and shuts:
 * open, connections pass through to the carrier's fake; refusing, the port is
 * closed, as when the carrier's API is down (ECONNREFUSED); resetting, each
 * request is taken and its connection reset before it reaches the fake
 * (ECONNRESET), so the carrier never hears of it.
 */
class CarrierDoor {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private resetting = false;
  private port = 0;

  constructor(private readonly carrierUrl: () => string) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async open(): Promise<void> {
    this.resetting = false;
    if (this.server) return;
    const carrier = new URL(this.carrierUrl());
    const server = createServer((client) => {
      const upstream = connect(Number(carrier.port), carrier.hostname);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => socket.destroy());
      }
      client.on('data', (chunk) => (this.resetting ? client.resetAndDestroy() : upstream.write(chunk)));
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  async refuse(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async reset(): Promise<void> {
    await this.open();
    this.resetting = true;
  }
}

describe('POST /api/v1/workflow/{workflow_id}/runs/{run_id}/cancel while the carrier cannot be reached', () => {
  const twilio = new TwilioFake();
  const telnyx = new TelnyxFake();
  const doors = { twilio: new CarrierDoor(() => twilio.url), telnyx: new CarrierDoor(() => telnyx.url) };
  let apps: TestApps;
  let org: TestOrganization;
  let workflow: SeededWorkflow;

  beforeAll(async () => {
    await Promise.all([twilio.start(), telnyx.start()]);
    await Promise.all([doors.twilio.open(), doors.telnyx.open()]);
    apps = await startTestApps({ env: { TWILIO_API_URL: doors.twilio.url, TELNYX_API_URL: doors.telnyx.url } });
    org = await createOrganization(apps.dataSource);
    workflow = await seedWorkflow(apps.dataSource, org.organizationId, { published: (id) => agentGraph(id) });
  });
  afterAll(async () => {
    await apps?.close();
    await Promise.all([doors.twilio.refuse(), doors.telnyx.refuse()]);
    await Promise.all([twilio.stop(), telnyx.stop()]);
  });

  const runPath = (runId: number) => `/api/v1/workflow/${workflow.workflowId}/runs/${runId}`;
  const readRun = async (runId: number) => (await apps.client.get(runPath(runId), { key: org.adminKey })).body;
  const cancel = (runId: number) => apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey });

  /** A run through a new configuration of `provider`, placed with the fake and ringing; `ring` makes the fake's call ring. */
  async function ringingRun(provider: 'twilio' | 'telnyx', ring: (runId: number) => Promise<unknown>): Promise<number> {
    const credentials = provider === 'twilio' ? twilio.credentials : telnyx.credentials;
    const config = await apps.client.post(
      '/api/v1/telephony-configurations',
      { name: provider, provider, credentials, from_numbers: ['+15005550006'], is_default_outbound: false, settings: {} },
      { key: org.adminKey },
    );
    expect(config.status).toBe(201);
    const triggered = await apps.client.post(
      `/api/v1/public/agent/${workflow.triggerUuid}`,
      { phone_number: '+14155550100', telephony_configuration_id: config.body.id },
      { key: org.adminKey },
    );
    expect(triggered.status).toBe(200);
    const runId: number = triggered.body.workflow_run_id;
    await ring(runId);
    await waitFor(async () => ((await readRun(runId)).status === 'ringing' ? true : undefined), { what: `run ${runId} to ring` });
    return runId;
  }

  /** 502 while the door refuses or resets, the run ringing on; 202 once it opens, and the run ends canceled. */
  async function cancelsOnceReachable(door: CarrierDoor, runId: number): Promise<void> {
    for (const shut of [() => door.refuse(), () => door.reset()]) {
      await shut();
      const response = await cancel(runId);
      expect(response.status).toBe(502);
      expect(response.body).toMatchObject({ code: 'carrier_unreachable', message: expect.stringContaining('could not be asked to hang up') });
      expect((await readRun(runId)).status).toBe('ringing');
    }
    await door.open();
    expect((await cancel(runId)).status).toBe(202);
    const run = await waitFor(async () => {
      const current = await readRun(runId);
      return current.is_completed ? current : undefined;
    });
    expect(run).toMatchObject({ status: 'canceled', answered_at: null });
  }

  it('answers 502 carrier_unreachable, not a database outage, when Twilio refuses or resets the connection', async () => {
    const runId = await ringingRun('twilio', async (id) => {
      const call = await waitFor(async () => [...twilio.calls.values()].find((each) => each.statusCallback?.endsWith(`/status/${id}`)), {
        what: `Twilio to be asked to dial run ${id}`,
      });
      await twilio.ring(call.sid);
    });
    await cancelsOnceReachable(doors.twilio, runId);
  });

  it('answers 502 carrier_unreachable, not a refusal, when Telnyx refuses or resets the connection', async () => {
    const runId = await ringingRun('telnyx', async (id) => {
      const call = await waitFor(async () => telnyx.callForRun(id), { what: `Telnyx to be asked to dial run ${id}` });
      await telnyx.sendCallEvent(call.callControlId, 'call.initiated');
    });
    await cancelsOnceReachable(doors.telnyx, runId);
  });
});
