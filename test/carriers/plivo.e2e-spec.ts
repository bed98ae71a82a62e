import { WorkflowRunStore } from '@app/persistence';
import { CarrierWebhooks, TelephonyProvider, TelephonyProviders } from '@app/telephony';
import { RunArtifactsCollector } from '../../apps/dialer/src/call-events/run-artifacts-collector.service';
import { GroupedRunWrites } from '../../apps/dialer/src/runs/grouped-run-writes.service';
import { FakePlivoCall, PlivoFake } from '../fakes/plivo-fake';
import { TestOrganization } from '../support/fixtures';
import { TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';
import { AGENT_TURNS, CALLEE, eventsOf, FROM, useCarrierHarness } from './carrier-harness';

describe('placing calls through Plivo', () => {
  const fake = new PlivoFake();
  const carrier = useCarrierHarness({
    fake,
    provider: 'plivo',
    name: 'Plivo',
    apiUrlEnv: 'PLIVO_API_URL',
    findCall: (runId) => [...fake.calls.values()].find((call) => ofRun(runId)(call.answerUrl)),
  });
  const { callbacks, callFor, createConfiguration, playAgent, runPath, readRun, runReaches, trigger } = carrier;
  let apps: TestApps;
  let org: TestOrganization;
  let recordedConfigId: number;
  let machineConfigId: number;

  beforeAll(async () => {
    ({ apps, org } = carrier);
    recordedConfigId = await createConfiguration({ record: true });
    machineConfigId = await createConfiguration({ answering_machine_detection: true, machine_action: 'hangup' });
  });

  const ofRun = (runId: number) => (url: string | null | undefined) => Boolean(url?.endsWith(`/answer/${runId}`));
  const dialsFor = (runId: number) => fake.dialRequests().filter((request) => ofRun(runId)((request.json as { answer_url?: string } | null)?.answer_url));
  /** A call placed, rung, answered and hung up through Plivo, its hang-up applied to the run. */
  async function answeredAndEnded(configId: number, to: string, durationSeconds: number): Promise<{ runId: number; call: FakePlivoCall }> {
    const runId = await trigger(configId, to);
    const call = await callFor(runId);
    await fake.ring(call.requestUuid);
    await fake.answer(call.requestUuid);
    await fake.complete(call.requestUuid, { durationSeconds });
    await runReaches(runId, (run) => run.status === 'completed', 'the hang-up to be applied');
    return { runId, call };
  }
  const basic = () => `Basic ${Buffer.from(`${PlivoFake.AUTH_ID}:${PlivoFake.AUTH_TOKEN}`).toString('base64')}`;

  describe('POST /api/v1/telephony-configurations/{id}/verify', () => {
    const verify = (configId: number) => apps.client.post(`/api/v1/telephony-configurations/${configId}/verify`, undefined, { key: org.adminKey });
    const listings = () => fake.requests.filter((request) => request.method === 'GET' && request.path === `/v1/Account/${PlivoFake.AUTH_ID}/Call/`);

    it('answers ok when Plivo accepts the Auth ID and Auth Token', async () => {
      const before = listings().length;
      const response = await verify(recordedConfigId);
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ ok: true });
      const seen = listings().slice(before);
      expect(seen).toHaveLength(1);
      expect(seen[0].headers.authorization).toBe(basic());
    });

    it('answers ok false with the reason when Plivo refuses the Auth Token', async () => {
      const configId = await createConfiguration({}, { ...fake.credentials, auth_token: 'f'.repeat(40) });
      const response = await verify(configId);
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ ok: false, reason: 'unauthorized', message: expect.any(String) });
    });

    it('answers 502 carrier_unreachable when Plivo fails to answer, or drops the connection', async () => {
      fake.failNext('server_error');
      const failed = await verify(recordedConfigId);
      expect(failed.status).toBe(502);
      expect(failed.body).toMatchObject({ code: 'carrier_unreachable' });
      fake.failNext('reset', 1, { anyRequest: true });
      const dropped = await verify(recordedConfigId);
      expect(dropped.status).toBe(502);
      expect(dropped.body).toMatchObject({ code: 'carrier_unreachable' });
    });
  });

  it('places the call, streams it to the agent through Plivo XML, and completes the run with duration, cost and recording', async () => {
    const runId = await trigger(recordedConfigId);
    const call = await callFor(runId);

    const [dial] = dialsFor(runId);
    expect(dial.headers.authorization).toBe(basic());
    expect(dial.path).toBe(`/v1/Account/${PlivoFake.AUTH_ID}/Call/`);
    const urls = callbacks(runId);
    expect(dial.json).toMatchObject({
      from: FROM.slice(1),
      to: CALLEE.slice(1),
      answer_url: urls.answerUrl,
      ring_url: urls.statusUrl,
      hangup_url: urls.statusUrl,
    });

    expect((await fake.ring(call.requestUuid))?.status).toBe(200);
    await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    const answer = await fake.answer(call.requestUuid);
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('<Record recordSession="true"');
    expect(call.recordCallbackUrl).toBe(urls.recordingUrl);
    const stream = /<Stream [^>]*>([^<]+)<\/Stream>/.exec(answer.body)?.[1].replace(/&amp;/g, '&');
    expect(stream?.startsWith('ws://127.0.0.1:8090/media?')).toBe(true);
    // A bidirectional mu-law 8 kHz stream, as Twilio's and Telnyx's.
    expect(answer.body).toMatch(/<Stream [^>]*bidirectional="true"[^>]*contentType="audio\/x-mulaw;rate=8000"/);
    const token = new URL(stream!).searchParams.get('session_token');
    expect(token).toBeTruthy();
    await runReaches(runId, (run) => run.status === 'in_progress', 'the run to be answered');

    await playAgent(runId, token!, call.requestUuid);

    expect((await fake.complete(call.requestUuid, { durationSeconds: 37, totalCost: '0.01020' }))?.status).toBe(200);
    await runReaches(runId, (run) => run.status === 'completed', 'the call to end');
    expect((await fake.recordingReady(call.requestUuid, { durationSeconds: 2 })).status).toBe(200);

    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to complete');
    expect(run).toMatchObject({ status: 'completed', duration_seconds: 37 });
    expect(run.cost_info).toMatchObject({ total_cost: 0.0102, currency: 'USD' });
    const transcript = await apps.client.get(run.transcript_url);
    expect(transcript.body.turns).toEqual(AGENT_TURNS);
    expect(run.recording_url.startsWith(apps.baseUrl)).toBe(true);
    const recording = await fetch(run.recording_url);
    expect(recording.status).toBe(200);
    expect(Buffer.from(await recording.arrayBuffer())).toEqual(PlivoFake.recordingBytes(2));
    const download = fake.requests.find((request) => request.method === 'GET' && request.path.includes('/Recording/'));
    expect(download?.headers.authorization).toBe(basic());
  });

  it('stores a recording Plivo announces after the run was finished without it', async () => {
    const { runId, call } = await answeredAndEnded(recordedConfigId, '+14155550175', 12);
    // What the reaper does 30 s after the hang-up when no recording has come: finish the run without one.
    await apps.dialer!.get(RunArtifactsCollector).collect(runId, true);
    const finished = await readRun(runId);
    expect(finished).toMatchObject({ is_completed: true, recording_url: null });

    expect((await fake.recordingReady(call.requestUuid, { durationSeconds: 3 })).status).toBe(200);
    const run = await runReaches(runId, (current) => current.recording_url !== null, 'the late recording to be stored');
    expect(run).toMatchObject({ status: 'completed', is_completed: true, duration_seconds: 12 });
    expect(run.transcript_url).toEqual(expect.any(String));
    const recording = await fetch(run.recording_url);
    expect(Buffer.from(await recording.arrayBuffer())).toEqual(PlivoFake.recordingBytes(3));
    expect(eventsOf(run)).toContain('artifacts.late_recording_stored');
  });

  it("keeps the agent runtime's recording when it was uploaded while Plivo's was being fetched", async () => {
    const { runId, call } = await answeredAndEnded(recordedConfigId, '+14155550176', 12);
    const plivo = apps.dialer!.get(TelephonyProviders).get('plivo') as TelephonyProvider & CarrierWebhooks;
    const fetchRecording = plivo.fetchRecording.bind(plivo);
    const fetches = jest.spyOn(plivo, 'fetchRecording').mockImplementation(async (...args) => {
      const fetched = await fetchRecording(...args);
      // The runtime's upload lands meanwhile, as its endpoint stores it.
      await apps.dialer!.get(WorkflowRunStore).recordRecordingIfNone(runId, 'runs/agent-upload.wav');
      return fetched;
    });
    try {
      expect((await fake.recordingReady(call.requestUuid, { durationSeconds: 3 })).status).toBe(200);
      await waitFor(async () => {
        const [row] = await apps.dataSource.query(`SELECT carrier_recording_url FROM workflow_runs WHERE id = $1`, [runId]);
        return row.carrier_recording_url ? true : undefined;
      });
      // The runtime never closed its session: finish the run as the reaper does after the grace.
      await apps.dialer!.get(RunArtifactsCollector).collect(runId, true);
      expect(fetches).toHaveBeenCalledTimes(1);
    } finally {
      fetches.mockRestore();
    }
    expect(await readRun(runId)).toMatchObject({ status: 'completed', is_completed: true });
    const [row] = await apps.dataSource.query(`SELECT recording_key FROM workflow_runs WHERE id = $1`, [runId]);
    expect(row.recording_key).toBe('runs/agent-upload.wav');
  });

  it('stores no recording for a call whose run ended other than completed', async () => {
    const { runId, call } = await answeredAndEnded(recordedConfigId, '+14155550177', 12);
    // As when the reaper ended an answered call past its maximum duration: a final status with no artifacts.
    await apps.dataSource.query(
      `UPDATE workflow_runs SET status = 'failed', end_reason = 'max_duration_exceeded', is_completed = true WHERE id = $1`,
      [runId],
    );
    const before = fake.requests.length;
    const collector = apps.dialer!.get(RunArtifactsCollector);
    const storeLate = collector.storeLateRecording.bind(collector);
    const settled = new Set<number>();
    const late = jest.spyOn(collector, 'storeLateRecording').mockImplementation(async (id) => {
      await storeLate(id);
      settled.add(id);
    });
    try {
      expect((await fake.recordingReady(call.requestUuid, { durationSeconds: 3 })).status).toBe(200);
      await waitFor(async () => (settled.has(runId) ? true : undefined), { what: 'the late recording to be considered' });
    } finally {
      late.mockRestore();
    }

    const run = await readRun(runId);
    expect(run).toMatchObject({ status: 'failed', recording_url: null });
    expect(eventsOf(run)).not.toContain('artifacts.late_recording_stored');
    expect(fake.requests.slice(before).filter((request) => request.path.includes('/Recording/'))).toEqual([]);
  });

  it('hangs up, when the reaper ends its run, an answered call Plivo lets talk on past its maximum duration, and records what Plivo bills', async () => {
    const runId = await trigger(recordedConfigId, '+14155550191');
    const call = await callFor(runId);
    await fake.ring(call.requestUuid);
    await fake.answer(call.requestUuid);
    await runReaches(runId, (run) => run.status === 'in_progress', 'the run to be answered');
    // What Plivo will bill once the call is hung up.
    fake.setCallStatus(call.requestUuid, { duration: 150, totalCost: '0.02125' });

    const reaped = await carrier.reapedPastItsLimit(runId);

    expect(reaped).toMatchObject({ status: 'failed', end_reason: 'max_duration_exceeded', is_completed: true });
    // The call request is answered, so it is the live call that is hung up.
    const hangups = fake.requests.filter((request) => request.method === 'DELETE' && request.path.endsWith(`/Call/${call.requestUuid}/`));
    expect(hangups).toHaveLength(1);
    expect(fake.call(call.requestUuid).status).toBe('completed');
    const billed = await runReaches(runId, (run) => run.duration_seconds === 150 && run.cost_info.total_cost !== undefined, 'what Plivo billed');
    expect(billed).toMatchObject({
      status: 'failed',
      end_reason: 'max_duration_exceeded',
      cost_info: { call_duration_seconds: 150, total_cost: 0.02125, currency: 'USD' },
    });
  });

  describe('webhooks that Plivo did not send', () => {
    let runId: number;
    let call: FakePlivoCall;
    let statusUrl: string;

    beforeAll(async () => {
      runId = await trigger(recordedConfigId);
      call = await callFor(runId);
      ({ statusUrl } = callbacks(runId));
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

    it('answers 403 to a replay that moves its signature to the main-account header and leaves X-Plivo-Signature-V3 empty', async () => {
      const fields = fake.callbackFields(call.requestUuid, 'ringing', { Event: 'Ring' });
      const nonce = '22345678901234567890';
      expect((await fake.sendStatus(statusUrl, fields, { nonce })).status).toBe(200);
      const copy = await fake.sendStatus(statusUrl, fields, { nonce, accountSignatureMoved: true });
      expect(copy.status).toBe(403);
      expect(JSON.parse(copy.body).code).toBe('webhook_signature_invalid');
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
    expect(dialsFor(runId)[0].json).toMatchObject({ machine_detection: 'hangup', machine_detection_url: callbacks(runId).statusUrl });
    await fake.ring(call.requestUuid);
    await fake.answer(call.requestUuid);
    expect((await fake.detectMachine(call.requestUuid, true)).status).toBe(200);
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to end');
    expect(run).toMatchObject({ status: 'completed', gathered_context: { answered_by: 'machine' }, duration_seconds: 3 });
  });

  it('records a machine verdict that comes after the hang-up was applied, and ends the run without waiting for an agent report', async () => {
    // Plivo ends the call and posts both callbacks at once; here the hang-up is applied first.
    const { runId, call } = await answeredAndEnded(machineConfigId, '+14155550176', 3);
    const verdict = await fake.sendStatus(
      callbacks(runId).statusUrl,
      fake.callbackFields(call.requestUuid, 'in-progress', { Event: 'MachineDetection', Machine: 'true', IfMachine: 'hangup' }),
    );
    expect(verdict.status).toBe(200);
    // Well within the 20 s a completed call waits for the agent runtime to report.
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to end');
    expect(run).toMatchObject({ status: 'completed', gathered_context: { answered_by: 'machine' }, duration_seconds: 3 });
  });

  it('stores, with a machine hung up on, every turn its agent was answered for, and refuses the turns after', async () => {
    const runId = await trigger(machineConfigId, '+14155550174');
    const call = await callFor(runId);
    await fake.ring(call.requestUuid);
    const answer = await fake.answer(call.requestUuid);
    const stream = /<Stream [^>]*>([^<]+)<\/Stream>/.exec(answer.body)?.[1].replace(/&amp;/g, '&');
    const token = new URL(stream!).searchParams.get('session_token')!;
    const report = async (turns: ReadonlyArray<Record<string, unknown>>) => {
      const events = turns.map((turn) => ({ type: 'transcript', ...turn }));
      const response = await apps.client.post(`/api/v1/agent-sessions/${encodeURIComponent(token)}/events`, { events });
      return { status: response.status, code: response.body.code };
    };
    const late = [{ speaker: 'agent', text: 'Are you still there?', start_ms: 9_000, end_ms: 9_800 }];
    // One report lands as the collector closes the agent's session, the next as it stores the run's artifacts.
    const store = apps.dialer!.get(WorkflowRunStore);
    const close = store.closeAgentSession.bind(store);
    const writes = apps.dialer!.get(GroupedRunWrites);
    const complete = writes.completeArtifacts.bind(writes);
    // The verdict's job and the hang-up's may both finish the run: each waits for the same reports.
    let beforeClose: ReturnType<typeof report> | undefined;
    let afterClose: ReturnType<typeof report> | undefined;
    const closeSpy = jest.spyOn(store, 'closeAgentSession').mockImplementation(async (id) => {
      if (id === runId) await (beforeClose ??= report(AGENT_TURNS));
      return close(id);
    });
    const completeSpy = jest.spyOn(writes, 'completeArtifacts').mockImplementation(async (id, keys) => {
      if (id === runId) await (afterClose ??= report(late));
      return complete(id, keys);
    });
    try {
      await fake.detectMachine(call.requestUuid, true);
      // The first read that finds the run complete finds its final transcript: nothing is stored again after.
      const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to end');
      expect(await beforeClose).toEqual({ status: 200, code: undefined });
      expect(await afterClose).toEqual({ status: 410, code: 'session_ended' });
      expect((await apps.client.get(run.transcript_url)).body.turns).toEqual(AGENT_TURNS);
    } finally {
      closeSpy.mockRestore();
      completeSpy.mockRestore();
    }
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

  describe('a dial whose answer was lost, so the request UUID was never learned', () => {
    const callsOf = (runId: number) => [...fake.calls.values()].filter((placed) => ofRun(runId)(placed.answerUrl));

    afterEach(() => {
      fake.queueCalls = false;
    });

    const strandedDialingRun = (to: string, dialedSecondsAgo: number) => carrier.strandedDialingRun(recordedConfigId, to, dialedSecondsAgo);

    /** The dial request that dialer sent, as Plivo received it. */
    async function dialAsTheDialerDid(runId: number, to: string): Promise<string> {
      const urls = callbacks(runId);
      const response = await fetch(`${fake.url}/v1/Account/${PlivoFake.AUTH_ID}/Call/`, {
        method: 'POST',
        headers: { authorization: basic(), 'content-type': 'application/json' },
        body: JSON.stringify({
          from: FROM.slice(1),
          to: to.slice(1),
          answer_url: urls.answerUrl,
          answer_method: 'POST',
          ring_url: urls.statusUrl,
          ring_method: 'POST',
          hangup_url: urls.statusUrl,
          hangup_method: 'POST',
        }),
      });
      if (response.status !== 201) throw new Error(`the dial answered ${response.status}: ${await response.text()}`);
      return ((await response.json()) as { request_uuid: string }).request_uuid;
    }

    it('finds the call Plivo queued by its numbers, follows it to the end, and never dials again', async () => {
      // An account at its calls-per-second limit: Plivo answers "call queued", and that answer is lost.
      fake.queueCalls = true;
      fake.failNext('reset');
      const runId = await trigger(recordedConfigId, '+14155550181');
      const call = await callFor(runId);
      const reconciled = await runReaches(runId, (run) => eventsOf(run).includes('dialer.reconciled'), 'the dialer to learn the request UUID from Plivo');
      expect(reconciled).toMatchObject({ status: 'dialing', provider_call_id: call.requestUuid });

      await fake.ring(call.requestUuid);
      await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
      await fake.end(call.requestUuid, 'no-answer');
      const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to end');
      expect(run).toMatchObject({ status: 'no_answer', end_reason: 'no_answer', provider_call_id: call.requestUuid });
      expect(eventsOf(run)).not.toContain('dialer.outcome_unknown');
      expect(dialsFor(runId)).toHaveLength(1);
      expect(callsOf(runId)).toHaveLength(1);
    });

    it('lets the reaper find the ringing call of a dialer that died before the answer came, without dialing again', async () => {
      const to = '+14155550182';
      const runId = await strandedDialingRun(to, 90);
      const uuid = await dialAsTheDialerDid(runId, to);
      fake.setCallStatus(uuid, { status: 'ringing', dateCreated: new Date(Date.now() - 89_000) });

      // The live call list shows it ringing: the reaper applies that, and the run holds the call's UUID.
      const ringing = await waitFor(
        async () => {
          const run = await readRun(runId);
          return run.status === 'ringing' ? run : undefined;
        },
        { what: 'the reaper to find the call at Plivo', timeoutMs: 20_000 },
      );
      expect(ringing.provider_call_id).toBe(uuid);
      await fake.end(uuid, 'busy');
      const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to end');
      expect(run).toMatchObject({ status: 'busy', provider_call_id: uuid });
      expect(dialsFor(runId)).toHaveLength(1);
      expect(callsOf(runId)).toHaveLength(1);
    });
  });
});
