import { FakePlivoCall, PlivoFake } from '../fakes/plivo-fake';
import { agentGraph, createOrganization, seedWorkflow, SeededWorkflow, TestOrganization } from '../support/fixtures';
import { startTestApps, TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';

const CALLEE = '+14155550100';
const FROM = '+15005550006';

describe('placing calls through Plivo', () => {
  let fake: PlivoFake;
  let apps: TestApps;
  let org: TestOrganization;
  let workflow: SeededWorkflow;
  let recordedConfigId: number;
  let machineConfigId: number;

  beforeAll(async () => {
    fake = new PlivoFake();
    await fake.start();
    apps = await startTestApps({ env: { PLIVO_API_URL: fake.baseUrl } });
    org = await createOrganization(apps.dataSource, 'Plivo customer');
    recordedConfigId = await createConfiguration({ record: true });
    machineConfigId = await createConfiguration({ answering_machine_detection: true, machine_action: 'hangup' });
    workflow = await seedWorkflow(apps.dataSource, org.organizationId, {
      published: (uuid) => agentGraph(uuid, { greeting: 'Hello {{ initial_context.name }}!' }),
    });
  });
  afterAll(async () => {
    await apps?.close();
    await fake?.stop();
  });

  async function createConfiguration(settings: Record<string, unknown>): Promise<number> {
    const response = await apps.client.post(
      '/api/v1/telephony-configurations',
      { name: `Plivo ${JSON.stringify(settings)}`, provider: 'plivo', credentials: fake.credentials, from_numbers: [FROM], settings },
      { key: org.adminKey },
    );
    if (response.status !== 201) throw new Error(`creating the configuration answered ${response.status}: ${response.text}`);
    return response.body.id;
  }

  const runPath = (runId: number) => `/api/v1/workflow/${workflow.workflowId}/runs/${runId}`;
  const readRun = async (runId: number) => (await apps.client.get(runPath(runId), { key: org.adminKey })).body;
  const runReaches = (runId: number, done: (run: any) => boolean, what: string) =>
    waitFor(async () => {
      const run = await readRun(runId);
      return done(run) ? run : undefined;
    }, { what, timeoutMs: 12000 });

  async function trigger(configId: number, to = CALLEE): Promise<number> {
    const response = await apps.client.post(
      `/api/v1/public/agent/${workflow.triggerUuid}`,
      { phone_number: to, initial_context: { name: 'Ada' }, telephony_configuration_id: configId },
      { key: org.adminKey },
    );
    if (response.status !== 200) throw new Error(`trigger answered ${response.status}: ${response.text}`);
    return response.body.workflow_run_id;
  }

  const ofRun = (runId: number) => (url: string | null | undefined) => Boolean(url?.endsWith(`/answer/${runId}`));
  const callFor = (runId: number): Promise<FakePlivoCall> =>
    waitFor(async () => [...fake.calls.values()].find((call) => ofRun(runId)(call.answerUrl)), { what: `Plivo to be asked to dial run ${runId}` });
  const dialsFor = (runId: number) => fake.dialRequests().filter((request) => ofRun(runId)((request.json as { answer_url?: string } | null)?.answer_url));
  const basic = () => `Basic ${Buffer.from(`${PlivoFake.AUTH_ID}:${PlivoFake.AUTH_TOKEN}`).toString('base64')}`;

  it('places the call, streams it to the agent through Plivo XML, and completes the run with duration, cost and recording', async () => {
    const runId = await trigger(recordedConfigId);
    const call = await callFor(runId);

    const [dial] = dialsFor(runId);
    expect(dial.headers.authorization).toBe(basic());
    expect(dial.path).toBe(`/v1/Account/${PlivoFake.AUTH_ID}/Call/`);
    const callbacks = `${apps.baseUrl}/api/v1/telephony/plivo`;
    expect(dial.json).toMatchObject({
      from: FROM.slice(1),
      to: CALLEE.slice(1),
      answer_url: `${callbacks}/answer/${runId}`,
      ring_url: `${callbacks}/status/${runId}`,
      hangup_url: `${callbacks}/status/${runId}`,
    });

    expect((await fake.ring(call.requestUuid))?.status).toBe(200);
    await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    const answer = await fake.answer(call.requestUuid);
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('<Record recordSession="true"');
    expect(call.recordCallbackUrl).toBe(`${callbacks}/recording/${runId}`);
    const stream = /<Stream [^>]*>([^<]+)<\/Stream>/.exec(answer.body)?.[1].replace(/&amp;/g, '&');
    expect(stream?.startsWith('ws://127.0.0.1:8090/media?')).toBe(true);
    const token = new URL(stream!).searchParams.get('session_token');
    expect(token).toBeTruthy();
    await runReaches(runId, (run) => run.status === 'in_progress', 'the run to be answered');

    const session = `/api/v1/agent-sessions/${encodeURIComponent(token!)}`;
    const agent = await apps.client.get(session);
    expect(agent.status).toBe(200);
    expect(agent.body).toMatchObject({
      run_id: runId,
      agent: { opening: 'Hello Ada!' },
      call: { to: CALLEE, from: FROM, provider: 'plivo', provider_call_id: call.requestUuid },
      initial_context: { name: 'Ada' },
    });
    const turns = [
      { speaker: 'agent', text: 'Hello Ada!', start_ms: 0, end_ms: 900 },
      { speaker: 'user', text: 'Hi, who is this?', start_ms: 1200, end_ms: 2100 },
    ];
    const reported = await apps.client.post(`${session}/events`, {
      events: [...turns.map((turn) => ({ type: 'transcript', ...turn })), { type: 'session_ended' }],
    });
    expect(reported.status).toBe(200);

    expect((await fake.complete(call.requestUuid, { durationSeconds: 37, totalCost: '0.01020' }))?.status).toBe(200);
    await runReaches(runId, (run) => run.status === 'completed', 'the call to end');
    expect((await fake.recordingReady(call.requestUuid, { durationSeconds: 2 })).status).toBe(200);

    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to complete');
    expect(run).toMatchObject({ status: 'completed', duration_seconds: 37 });
    expect(run.cost_info).toMatchObject({ total_cost: 0.0102, currency: 'USD' });
    const transcript = await apps.client.get(run.transcript_url);
    expect(transcript.body.turns).toEqual(turns);
    expect(run.recording_url.startsWith(apps.baseUrl)).toBe(true);
    const recording = await fetch(run.recording_url);
    expect(recording.status).toBe(200);
    expect(Buffer.from(await recording.arrayBuffer())).toEqual(PlivoFake.recordingBytes(2));
    const download = fake.requests.find((request) => request.method === 'GET' && request.path.includes('/Recording/'));
    expect(download?.headers.authorization).toBe(basic());
  });

  describe('webhooks that Plivo did not send', () => {
    let runId: number;
    let call: FakePlivoCall;
    let statusUrl: string;

    beforeAll(async () => {
      runId = await trigger(recordedConfigId);
      call = await callFor(runId);
      statusUrl = `${apps.baseUrl}/api/v1/telephony/plivo/status/${runId}`;
      await fake.ring(call.requestUuid);
      await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    });
    afterAll(async () => {
      await fake.end(call.requestUuid, 'no-answer');
    });

    const hangup = () => fake.callbackFields(call.requestUuid, 'completed', { Duration: '9', TotalCost: '0.5' });

    it('answers 403 to a callback signed with another auth token', async () => {
      const response = await fake.sendStatus(statusUrl, hangup(), { authToken: 'bm90LXRoZS1yaWdodC1hdXRoLXRva2VuLWF0LWFsbA' });
      expect(response.status).toBe(403);
      expect(JSON.parse(response.body).code).toBe('webhook_signature_invalid');
    });

    it('answers 401 to an unsigned callback', async () => {
      const response = await fake.sendStatus(statusUrl, hangup(), { signature: null });
      expect(response.status).toBe(401);
      expect(JSON.parse(response.body).code).toBe('webhook_unsigned');
    });

    it('answers 403 to an exact replay (same nonce and signature) of a callback already delivered', async () => {
      const fields = fake.callbackFields(call.requestUuid, 'ringing', { Event: 'Ring' });
      expect((await fake.sendStatus(statusUrl, fields, { nonce: '12345678901234567890' })).status).toBe(200);
      expect((await fake.sendStatus(statusUrl, fields, { nonce: '12345678901234567890' })).status).toBe(403);
    });

    it('leaves the run as it was after all of them', async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await readRun(runId)).toMatchObject({ status: 'ringing', is_completed: false });
    });
  });

  it('ends the run failed with invalid_number when Plivo refuses the number', async () => {
    fake.failNext({ status: 400, error: "invalid 'to' number" });
    const runId = await trigger(recordedConfigId, '+14155550177');
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to fail');
    expect(run).toMatchObject({ status: 'failed', end_reason: 'invalid_number' });
    expect(dialsFor(runId)).toHaveLength(1);
    expect([...fake.calls.values()].filter((call) => ofRun(runId)(call.answerUrl))).toHaveLength(0);
  });

  it('dials again after backoff when Plivo throttles, and places exactly one call', async () => {
    fake.throttleNext();
    const runId = await trigger(recordedConfigId, '+14155550178');
    const call = await callFor(runId);
    expect(dialsFor(runId)).toHaveLength(2);
    expect([...fake.calls.values()].filter((placed) => ofRun(runId)(placed.answerUrl))).toHaveLength(1);
    await fake.end(call.requestUuid, 'busy');
    expect(await runReaches(runId, (run) => run.is_completed === true, 'the run to end')).toMatchObject({ status: 'busy' });
  });

  it('hangs up on an answering machine when the configuration says so, and records who answered', async () => {
    const runId = await trigger(machineConfigId, '+14155550179');
    const call = await callFor(runId);
    // Plivo's own detection ends a call a machine answered.
    expect(dialsFor(runId)[0].json).toMatchObject({ machine_detection: 'hangup', machine_detection_url: `${apps.baseUrl}/api/v1/telephony/plivo/status/${runId}` });
    await fake.ring(call.requestUuid);
    await fake.answer(call.requestUuid);
    expect((await fake.detectMachine(call.requestUuid, true)).status).toBe(200);
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to end');
    expect(run).toMatchObject({ status: 'completed', gathered_context: { answered_by: 'machine' }, duration_seconds: 3 });
  });

  it('hangs up a ringing call through Plivo and ends the run canceled', async () => {
    const runId = await trigger(recordedConfigId, '+14155550180');
    const call = await callFor(runId);
    await fake.ring(call.requestUuid);
    await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    const response = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey });
    expect(response.status).toBe(202);
    const cancel = await waitFor(
      async () => fake.requests.find((request) => request.method === 'DELETE' && request.path.includes(call.requestUuid)),
      { what: 'the cancel request' },
    );
    expect(cancel.headers.authorization).toBe(basic());
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to end');
    expect(run).toMatchObject({ status: 'canceled', answered_at: null });
    expect(fake.call(call.requestUuid).status).toBe('cancel');
  });
});
