import { randomUUID } from 'node:crypto';
import { VonageFake, VonageFakeCall } from '../fakes/vonage-fake';
import { TestOrganization } from '../support/fixtures';
import { TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';
import { AGENT_TURNS, CALLEE, eventsOf, FROM, useCarrierHarness } from './carrier-harness';
import { ConcurrencyLimiter } from '@app/queue';

describe('placing calls through Vonage', () => {
  const fake = new VonageFake();
  const carrier = useCarrierHarness({
    fake,
    provider: 'vonage',
    name: 'Vonage',
    apiUrlEnv: 'VONAGE_API_URL',
    findCall: (runId) => fake.callForRun(runId),
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

  const storedCallId = async (runId: number): Promise<string | null> =>
    (await apps.dataSource.query('SELECT provider_call_id FROM workflow_runs WHERE id = $1', [runId]))[0]?.provider_call_id ?? null;
  const slotsInUse = (configId: number) => apps.dialer!.get(ConcurrencyLimiter).inUse(configId);
  const dialsFor = (runId: number) =>
    fake.dialRequests().filter((request) => JSON.stringify((request.body as { answer_url?: unknown } | null)?.answer_url ?? '').includes(`/answer/${runId}"`));

  describe('POST /api/v1/telephony-configurations/{id}/verify', () => {
    const verify = (configId: number) => apps.client.post(`/api/v1/telephony-configurations/${configId}/verify`, undefined, { key: org.adminKey });
    const listings = () => fake.requests.filter((request) => request.method === 'GET' && request.path === '/v1/calls');

    it("answers ok when Vonage accepts the application's JWT", async () => {
      const before = listings().length;
      const response = await verify(recordedConfigId);
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ ok: true });
      const seen = listings().slice(before);
      expect(seen).toHaveLength(1);
      expect(seen[0].headers.authorization).toMatch(/^Bearer /);
      expect(seen[0].jwtClaims).toMatchObject({ application_id: fake.applicationId });
    });

    it("answers ok false with the reason when Vonage refuses the application's key", async () => {
      const configId = await createConfiguration({}, { ...fake.credentials, private_key: new VonageFake().privateKeyPem });
      const response = await verify(configId);
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ ok: false, reason: 'unauthorized', message: expect.any(String) });
      expect(listings().at(-1)?.jwtClaims).toBeNull();
    });

    it('answers 502 carrier_unreachable when Vonage fails to answer', async () => {
      fake.failNextCallListing('server_error');
      const response = await verify(recordedConfigId);
      expect(response.status).toBe(502);
      expect(response.body).toMatchObject({ code: 'carrier_unreachable' });
    });
  });

  it('places the call, connects the agent through the NCCO, and completes the run with duration, price and recording', async () => {
    const runId = await trigger(recordedConfigId);
    const call = await callFor(runId);

    const [dial] = dialsFor(runId);
    expect(dial.headers.authorization).toMatch(/^Bearer /);
    expect(dial.jwtClaims).toMatchObject({ application_id: fake.applicationId });
    const urls = callbacks(runId);
    expect(dial.body).toMatchObject({
      to: [{ type: 'phone', number: CALLEE.slice(1) }],
      from: { type: 'phone', number: FROM.slice(1) },
      answer_url: [urls.answerUrl],
      answer_method: 'POST',
      event_url: [urls.statusUrl],
      event_method: 'POST',
    });

    expect((await fake.sendCallEvent(call.uuid, 'ringing')).status).toBe(200);
    await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    const answer = await fake.answerCall(call.uuid);
    expect(answer.status).toBe(200);
    const ncco = answer.ncco as Array<Record<string, any>>;
    expect(ncco.map((action) => action.action)).toEqual(['record', 'connect']);
    expect(ncco[0].eventUrl).toEqual([urls.recordingUrl]);
    const endpoint = ncco[1].endpoint[0];
    expect(endpoint.type).toBe('websocket');
    // The agent runtime gets (and sends) 16 kHz linear PCM, not the mu-law of the other carriers.
    expect(endpoint['content-type']).toBe('audio/l16;rate=16000');
    expect(endpoint.uri.startsWith('ws://127.0.0.1:8090/media?')).toBe(true);
    const token: string = endpoint.headers.session_token;
    expect(new URL(endpoint.uri).searchParams.get('session_token')).toBe(token);
    expect((await fake.sendCallEvent(call.uuid, 'answered')).status).toBe(200);
    await runReaches(runId, (run) => run.status === 'in_progress', 'the run to be answered');

    await playAgent(runId, token, call.uuid);

    expect((await fake.sendCallEvent(call.uuid, 'completed', { duration: '37', price: '0.00832500' })).status).toBe(200);
    await runReaches(runId, (run) => run.status === 'completed', 'the call to end');
    const audio = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(64, 7)]);
    expect((await fake.sendRecording(call.uuid, audio)).status).toBe(200);

    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to complete');
    expect(run).toMatchObject({ status: 'completed', duration_seconds: 37 });
    expect(run.cost_info).toMatchObject({ total_cost: 0.008325, currency: 'EUR' });
    const transcript = await apps.client.get(run.transcript_url);
    expect(transcript.body.turns).toEqual(AGENT_TURNS);
    expect(run.recording_url.startsWith(apps.baseUrl)).toBe(true);
    const recording = await fetch(run.recording_url);
    expect(recording.status).toBe(200);
    expect(Buffer.from(await recording.arrayBuffer())).toEqual(audio);
    // Fetched from Vonage with the application's JWT.
    const download = fake.requests.find((request) => request.method === 'GET' && request.path.startsWith('/v1/files/'));
    expect(download?.jwtClaims).toMatchObject({ application_id: fake.applicationId });
  });

  describe('webhooks that Vonage did not send', () => {
    let runId: number;
    let call: VonageFakeCall;

    beforeAll(async () => {
      runId = await trigger(recordedConfigId);
      call = await callFor(runId);
      await fake.sendCallEvent(call.uuid, 'ringing');
      await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    });
    afterAll(async () => {
      await fake.sendCallEvent(call.uuid, 'timeout');
    });

    const completed = () => fake.callEvent(call.uuid, 'completed');

    it('answers 403 to a token signed with another secret', async () => {
      const response = await fake.deliver(fake.signedRequest(call.eventUrl!, completed(), { secret: 'not-the-signature-secret-at-all' }));
      expect(response.status).toBe(403);
      expect(JSON.parse(response.body).code).toBe('webhook_signature_invalid');
    });

    it('answers 403 when the body does not match the signed payload_hash', async () => {
      const signed = fake.signedRequest(call.eventUrl!, fake.callEvent(call.uuid, 'busy'));
      const response = await fake.deliver({ ...signed, rawBody: Buffer.from(JSON.stringify(completed())) });
      expect(response.status).toBe(403);
    });

    it('answers 401 to an unsigned request', async () => {
      const signed = fake.signedRequest(call.eventUrl!, completed());
      const { authorization: _authorization, ...headers } = signed.headers;
      const response = await fake.deliver({ ...signed, headers });
      expect(response.status).toBe(401);
      expect(JSON.parse(response.body).code).toBe('webhook_unsigned');
    });

    it('answers 403 to a validly signed token issued too long ago (a replay)', async () => {
      const response = await fake.deliver(fake.signedRequest(call.eventUrl!, completed(), { iatSeconds: Math.floor(Date.now() / 1000) - 600 }));
      expect(response.status).toBe(403);
    });

    it('answers 403 to an exact replay of a webhook already delivered, inside the JWT window', async () => {
      const delivered = fake.signedRequest(call.eventUrl!, fake.callEvent(call.uuid, 'ringing'));
      expect((await fake.deliver(delivered)).status).toBe(200);
      const replay = await fake.deliver(delivered);
      expect(replay.status).toBe(403);
      expect(JSON.parse(replay.body).code).toBe('webhook_signature_invalid');
    });

    it('accepts a delivery whose jti another configuration already used: each remembers its own', async () => {
      // Another organization's account signs tokens with a secret of its own, and names them as it likes.
      const otherSecret = 'another-accounts-signature-secret';
      const otherRunId = await trigger(await createConfiguration({}, { ...fake.credentials, signature_secret: otherSecret }));
      const otherCall = await callFor(otherRunId);
      const jti = randomUUID();
      const first = await fake.deliver(fake.signedRequest(otherCall.eventUrl!, fake.callEvent(otherCall.uuid, 'ringing'), { secret: otherSecret, jti }));
      expect(first.status).toBe(200);

      const genuine = await fake.deliver(fake.signedRequest(call.eventUrl!, fake.callEvent(call.uuid, 'ringing'), { jti }));
      expect(genuine.status).toBe(200);
      await fake.deliver(fake.signedRequest(otherCall.eventUrl!, fake.callEvent(otherCall.uuid, 'timeout'), { secret: otherSecret }));
    });

    describe("a genuine request of another run's call, posted to this run's URLs", () => {
      let otherRunId: number;
      let otherCall: VonageFakeCall;

      beforeAll(async () => {
        otherRunId = await trigger(recordedConfigId);
        otherCall = await callFor(otherRunId);
        // The check needs this run's call id, stored once the dial's answer is read.
        await waitFor(async () => ((await storedCallId(runId)) === call.uuid ? true : undefined), { what: "this run's call id to be stored" });
      });

      it('is refused at the event URL with 403, and still counts at its own', async () => {
        // Vonage signs the body, not the URL: the body's uuid is what ties the event to its run.
        const genuine = fake.signedRequest(otherCall.eventUrl!, fake.callEvent(otherCall.uuid, 'busy'));
        const misdirected = await fake.deliver({ ...genuine, url: call.eventUrl! });
        expect(misdirected.status).toBe(403);
        expect(JSON.parse(misdirected.body).code).toBe('webhook_signature_invalid');

        expect((await fake.deliver(genuine)).status).toBe(200);
        expect(await runReaches(otherRunId, (run) => run.is_completed === true, 'the other run to end')).toMatchObject({ status: 'busy' });
      });

      it('is refused at the answer URL with 403: no agent session for this run is handed out', async () => {
        const answer = fake.signedRequest(call.answerUrl!, { to: otherCall.to, from: otherCall.from, uuid: otherCall.uuid, conversation_uuid: otherCall.conversationUuid });
        const response = await fake.deliver(answer);
        expect(response.status).toBe(403);
        expect(response.body).not.toContain('session_token');
        expect(JSON.parse(response.body).code).toBe('webhook_signature_invalid');
      });
    });

    it('accepts the same event signed again by Vonage, with a new jti', async () => {
      const event = fake.callEvent(call.uuid, 'ringing');
      expect((await fake.sendEvent(call.eventUrl!, event)).status).toBe(200);
      expect((await fake.sendEvent(call.eventUrl!, event)).status).toBe(200);
    });

    it('leaves the run as it was after all of them', async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await readRun(runId)).toMatchObject({ status: 'ringing', is_completed: false });
    });
  });

  it('ends the run failed with invalid_number when Vonage refuses the number', async () => {
    fake.failNext('invalid_number');
    const runId = await trigger(recordedConfigId, '+14155550177');
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to fail');
    expect(run).toMatchObject({ status: 'failed', end_reason: 'invalid_number' });
    expect(dialsFor(runId)).toHaveLength(1);
    expect(fake.callForRun(runId)).toBeUndefined();
  });

  it('dials again after backoff when Vonage throttles, and places exactly one call', async () => {
    fake.throttleNext();
    const runId = await trigger(recordedConfigId, '+14155550178');
    const call = await callFor(runId);
    expect(dialsFor(runId)).toHaveLength(2);
    expect([...fake.calls.values()].filter((placed) => placed.answerUrl === call.answerUrl)).toHaveLength(1);
    await fake.sendCallEvent(call.uuid, 'busy');
    expect(await runReaches(runId, (run) => run.is_completed === true, 'the run to end')).toMatchObject({ status: 'busy' });
  });

  it('keeps a run whose dial answer was lost dialing (Vonage cannot be asked by run), follows its call to the end, and never dials again', async () => {
    fake.failNext('reset');
    const runId = await trigger(recordedConfigId, '+14155550176');
    const call = await callFor(runId);
    const unknown = await runReaches(runId, (run) => eventsOf(run).includes('dialer.outcome_unknown'), 'the dialer to give up asking');
    // The call may be live: the run neither fails nor frees its slot, and is not dialed again.
    expect(unknown).toMatchObject({ status: 'dialing', provider_call_id: null, is_completed: false });
    expect(await slotsInUse(recordedConfigId)).toBe(1);

    await fake.sendCallEvent(call.uuid, 'ringing');
    await fake.sendCallEvent(call.uuid, 'busy');
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to end');
    expect(run).toMatchObject({ status: 'busy', provider_call_id: call.uuid });
    expect(dialsFor(runId)).toHaveLength(1);
    await waitFor(async () => ((await slotsInUse(recordedConfigId)) === 0 ? true : undefined), { what: 'the slot to be freed' });
  });

  it('hangs up on an answering machine when the configuration says so, and records who answered', async () => {
    const runId = await trigger(machineConfigId, '+14155550179');
    const call = await callFor(runId);
    // Vonage's own detection hangs up on a machine.
    expect(dialsFor(runId)[0].body).toMatchObject({ machine_detection: 'hangup' });
    await fake.sendCallEvent(call.uuid, 'ringing');
    await fake.sendCallEvent(call.uuid, 'answered');
    await fake.sendCallEvent(call.uuid, 'machine');
    await runReaches(runId, (run) => run.gathered_context?.answered_by === 'machine', 'the machine verdict');
    // Vonage hangs up itself and reports the end: we do not ask it to.
    await fake.sendCallEvent(call.uuid, 'completed', { duration: '3' });
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to end');
    expect(fake.requests.filter((request) => request.method === 'PUT' && request.path === `/v1/calls/${call.uuid}`)).toEqual([]);
    expect(run).toMatchObject({ status: 'completed', gathered_context: { answered_by: 'machine' } });
    expect(run.logs.events.map((event: { event: string }) => event.event)).toContain('dialer.machine_hangup');
  });

  it('answers 502 carrier_unreachable, to try again, when Vonage throttles the cancel, and hangs up on the retry', async () => {
    const runId = await trigger(recordedConfigId, '+14155550181');
    const call = await callFor(runId);
    await fake.sendCallEvent(call.uuid, 'ringing');
    await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    fake.throttleNextCallRead();
    const throttled = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey });
    expect({ status: throttled.status, code: throttled.body.code }).toEqual({ status: 502, code: 'carrier_unreachable' });
    expect(call.hungUpByApi).toBeFalsy();
    expect((await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey })).status).toBe(202);
    await runReaches(runId, (current) => current.status === 'canceled', 'the run to end canceled');
  });

  it('hangs up a ringing call through Vonage and ends the run canceled', async () => {
    const runId = await trigger(recordedConfigId, '+14155550180');
    const call = await callFor(runId);
    await fake.sendCallEvent(call.uuid, 'ringing');
    await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    const response = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey });
    expect(response.status).toBe(202);
    await waitFor(async () => (call.hungUpByApi ? true : undefined), { what: 'the hang-up request' });
    const hangup = fake.requests.find((request) => request.method === 'PUT' && request.path === `/v1/calls/${call.uuid}`);
    expect(hangup?.body).toEqual({ action: 'hangup' });
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to end');
    expect(run).toMatchObject({ status: 'canceled', answered_at: null });
  });

  it('hangs up, when the reaper ends its run, an answered call Vonage lets talk on past its maximum duration, and records what Vonage bills', async () => {
    const runId = await trigger(recordedConfigId, '+14155550182');
    const call = await callFor(runId);
    await fake.sendCallEvent(call.uuid, 'ringing');
    await fake.answerCall(call.uuid);
    await fake.sendCallEvent(call.uuid, 'answered');
    await runReaches(runId, (run) => run.status === 'in_progress', 'the run to be answered');

    const reaped = await carrier.reapedPastItsLimit(runId);

    expect(reaped).toMatchObject({ status: 'failed', end_reason: 'max_duration_exceeded', is_completed: true });
    const hangups = fake.requests.filter((request) => request.method === 'PUT' && request.path === `/v1/calls/${call.uuid}`);
    expect(hangups.map((request) => request.body)).toEqual([{ action: 'hangup' }]);
    expect(call).toMatchObject({ status: 'completed', hungUpByApi: true });
    // Vonage's `completed` for the hang-up carries the billed duration and price; the run stays as the reaper ended it.
    const billed = await runReaches(runId, (run) => run.duration_seconds !== null && run.cost_info.total_cost !== undefined, 'what Vonage billed');
    expect(billed).toMatchObject({
      status: 'failed',
      end_reason: 'max_duration_exceeded',
      duration_seconds: Number(call.duration),
      cost_info: { call_duration_seconds: Number(call.duration), total_cost: Number(call.price), currency: 'EUR' },
    });
  });
});
