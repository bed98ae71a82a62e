import { getQueueToken } from '@nestjs/bullmq';
import { Queue } from 'bullmq';
import { QueueName } from '@app/queue';
import { silentWav } from '../fakes/silent-wav';
import { TelnyxFake, TelnyxFakeCall } from '../fakes/telnyx-fake';
import { TestOrganization } from '../support/fixtures';
import { TestApps } from '../support/test-apps';
import { waitFor } from '../support/wait-for';
import { AGENT_TURNS, CALLEE, FROM, useCarrierHarness } from './carrier-harness';

/** How long a hang-up that does not tell whether the call was answered waits for its answer here (20 s by default). */
const LATE_ANSWER_WAIT_MS = 4_000;

describe('placing calls through Telnyx', () => {
  const fake = new TelnyxFake();
  const carrier = useCarrierHarness({
    fake,
    provider: 'telnyx',
    name: 'Telnyx',
    apiUrlEnv: 'TELNYX_API_URL',
    findCall: (runId) => fake.callForRun(runId),
    env: { LATE_ANSWER_WAIT_MS: String(LATE_ANSWER_WAIT_MS) },
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

  const dialsFor = (runId: number) =>
    fake.dialRequests().filter((request) => (request.body as { webhook_url?: string } | null)?.webhook_url?.endsWith(`/status/${runId}`));

  describe('POST /api/v1/telephony-configurations/{id}/verify', () => {
    const verify = (configId: number) => apps.client.post(`/api/v1/telephony-configurations/${configId}/verify`, undefined, { key: org.adminKey });
    const applicationReads = () => fake.requests.filter((request) => request.path.startsWith('/v2/call_control_applications/'));

    it('answers ok when Telnyx accepts the API key and knows the Call Control application', async () => {
      const before = applicationReads().length;
      const response = await verify(recordedConfigId);
      expect(response.status).toBe(200);
      expect(response.body).toEqual({ ok: true });
      const reads = applicationReads().slice(before);
      expect(reads).toHaveLength(1);
      expect(reads[0]).toMatchObject({ method: 'GET', path: `/v2/call_control_applications/${fake.connectionId}` });
      expect(reads[0].headers.authorization).toBe(`Bearer ${fake.apiKey}`);
    });

    it('answers ok false with the reason when Telnyx refuses the API key', async () => {
      const configId = await createConfiguration({}, { ...fake.credentials, api_key: 'KEY0000000000000000_wrong' });
      const response = await verify(configId);
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ ok: false, reason: 'unauthorized', message: expect.any(String) });
      expect(applicationReads().at(-1)?.headers.authorization).toBe('Bearer KEY0000000000000000_wrong');
    });

    it('answers ok false with connection_not_found when the key works but the connection_id is not its application', async () => {
      const configId = await createConfiguration({}, { ...fake.credentials, connection_id: '1999999999999999999' });
      const response = await verify(configId);
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ ok: false, reason: 'connection_not_found', message: expect.any(String) });
    });

    it('answers 502 carrier_unreachable when Telnyx fails to answer', async () => {
      fake.failNextApplicationRead('unavailable');
      const response = await verify(recordedConfigId);
      expect(response.status).toBe(502);
      expect(response.body).toMatchObject({ code: 'carrier_unreachable' });
    });
  });

  it('places the call with the agent stream in the dial, and completes the run with duration, cost and recording', async () => {
    const runId = await trigger(recordedConfigId);
    const call = await callFor(runId);

    const [dial] = dialsFor(runId);
    expect(dial.headers.authorization).toBe(`Bearer ${fake.apiKey}`);
    expect(dial.headers['content-type']).toMatch(/^application\/json/);
    const body = dial.body as Record<string, any>;
    expect(body).toMatchObject({
      connection_id: fake.connectionId,
      to: CALLEE,
      from: FROM,
      webhook_url: callbacks(runId).statusUrl,
      client_state: Buffer.from(String(runId)).toString('base64'),
      record: 'record-from-answer',
      // The agent runtime gets mu-law 8 kHz whatever codec the call negotiated, and sends the same back.
      stream_codec: 'PCMU',
      stream_bidirectional_mode: 'rtp',
      stream_bidirectional_codec: 'PCMU',
    });
    const streamUrl = new URL(body.stream_url);
    expect(`${streamUrl.origin}${streamUrl.pathname}`).toBe('ws://127.0.0.1:8090/media');
    const token = streamUrl.searchParams.get('session_token');
    expect(token).toBeTruthy();
    expect(body.stream_auth_token).toBe(token);

    expect((await fake.sendCallEvent(call.callControlId, 'call.initiated')).status).toBe(200);
    await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    // Answered 37 s before the hang-up, by Telnyx's clock.
    const answeredAt = new Date(Date.now() - 37_000);
    call.answeredAt = answeredAt;
    expect((await fake.sendEvent(call.webhookUrl!, fake.callEvent(call.callControlId, 'call.answered', {}, answeredAt))).status).toBe(200);
    await runReaches(runId, (run) => run.status === 'in_progress', 'the run to be answered');

    await playAgent(runId, token!, call.callControlId);

    expect((await fake.sendCallEvent(call.callControlId, 'call.hangup')).status).toBe(200);
    // Until Telnyx bills the call, its duration is the time from answer to hang-up.
    const ended = await runReaches(runId, (run) => run.status === 'completed' && run.duration_seconds !== null, 'the call to end');
    expect(ended.duration_seconds).toBeGreaterThanOrEqual(36);
    expect(ended.duration_seconds).toBeLessThanOrEqual(39);
    // Telnyx bills whole minutes on this account: the seconds it billed go beside the price, and the duration stays the talk time.
    expect(
      (await fake.sendCallEvent(call.callControlId, 'call.cost', { total_cost: '0.0125', billed_duration_secs: 60 })).status,
    ).toBe(200);
    const audio = silentWav(2);
    const recordingUrl = fake.addRecording(audio);
    expect((await fake.sendCallEvent(call.callControlId, 'call.recording.saved', { recording_urls: { wav: recordingUrl } })).status).toBe(200);

    const run = await runReaches(runId, (current) => current.is_completed === true && current.cost_info?.total_cost !== undefined, 'the run to complete');
    expect(run.status).toBe('completed');
    expect(run.duration_seconds).toBe(ended.duration_seconds);
    expect(run.cost_info).toEqual({ total_cost: 0.0125, currency: 'USD', call_duration_seconds: ended.duration_seconds, billed_duration_seconds: 60 });
    const transcript = await apps.client.get(run.transcript_url);
    expect(transcript.body.turns).toEqual(AGENT_TURNS);
    expect(run.recording_url.startsWith(apps.baseUrl)).toBe(true);
    const recording = await fetch(run.recording_url);
    expect(recording.status).toBe(200);
    expect(Buffer.from(await recording.arrayBuffer())).toEqual(audio);
    // Telnyx's call look-up carries no price (it comes on call.cost): the hang-up without one is not followed by a look-up.
    const lookups = fake.requests.filter((request) => request.method === 'GET' && request.path === `/v2/calls/${call.callControlId}`);
    expect(lookups).toEqual([]);
  });

  describe('webhooks that Telnyx did not send', () => {
    let runId: number;
    let call: TelnyxFakeCall;

    beforeAll(async () => {
      runId = await trigger(recordedConfigId);
      call = await callFor(runId);
      await fake.sendCallEvent(call.callControlId, 'call.initiated');
      await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    });
    afterAll(async () => {
      await fake.sendCallEvent(call.callControlId, 'call.hangup', { hangup_cause: 'timeout' });
    });

    const hangup = () => fake.callEvent(call.callControlId, 'call.hangup');

    it('answers 403 when the signed body was changed on the way', async () => {
      const signed = fake.signedRequest(call.webhookUrl!, fake.callEvent(call.callControlId, 'call.hangup', { hangup_cause: 'user_busy' }));
      const forged = { ...signed, rawBody: Buffer.from(JSON.stringify(hangup())) };
      const response = await fake.deliver(forged);
      expect(response.status).toBe(403);
      expect(JSON.parse(response.body).code).toBe('webhook_signature_invalid');
    });

    it('answers 403 to a request signed with another key', async () => {
      const other = new TelnyxFake();
      const response = await other.deliver(other.signedRequest(call.webhookUrl!, hangup()));
      expect(response.status).toBe(403);
    });

    it('answers 401 to an unsigned request', async () => {
      const signed = fake.signedRequest(call.webhookUrl!, hangup());
      const { 'telnyx-signature-ed25519': _signature, 'telnyx-timestamp': _timestamp, ...headers } = signed.headers;
      const response = await fake.deliver({ ...signed, headers });
      expect(response.status).toBe(401);
      expect(JSON.parse(response.body).code).toBe('webhook_unsigned');
    });

    it('answers 403 to a validly signed request whose timestamp is too old (a replay)', async () => {
      const stale = fake.signedRequest(call.webhookUrl!, hangup(), { timestampSeconds: Math.floor(Date.now() / 1000) - 600 });
      const response = await fake.deliver(stale);
      expect(response.status).toBe(403);
    });

    it('answers 403 to an exact replay of a webhook already delivered, inside the signature window', async () => {
      const delivered = fake.signedRequest(call.webhookUrl!, fake.callEvent(call.callControlId, 'call.initiated'));
      expect((await fake.deliver(delivered)).status).toBe(200);
      const replay = await fake.deliver(delivered);
      expect(replay.status).toBe(403);
      expect(JSON.parse(replay.body).code).toBe('webhook_signature_invalid');
    });

    it("answers 403 to a genuine event of another run's call posted to this run's URL, which still counts at its own", async () => {
      // Telnyx signs the body, not the URL: the body's client_state is what ties the event to its run.
      const otherRunId = await trigger(recordedConfigId);
      const otherCall = await callFor(otherRunId);
      const genuine = fake.signedRequest(otherCall.webhookUrl!, fake.callEvent(otherCall.callControlId, 'call.hangup', { hangup_cause: 'user_busy' }));

      const misdirected = await fake.deliver({ ...genuine, url: call.webhookUrl! });
      expect(misdirected.status).toBe(403);
      expect(JSON.parse(misdirected.body).code).toBe('webhook_signature_invalid');

      // Refused before the replay memory: the very same delivery is taken at the URL it was meant for.
      expect((await fake.deliver(genuine)).status).toBe(200);
      expect(await runReaches(otherRunId, (run) => run.is_completed === true, 'the other run to end')).toMatchObject({ status: 'busy' });
    });

    it("accepts Telnyx's own redelivery of an event, which is signed anew", async () => {
      const event = fake.callEvent(call.callControlId, 'call.initiated');
      expect((await fake.sendEvent(call.webhookUrl!, event)).status).toBe(200);
      expect((await fake.sendEvent(call.webhookUrl!, { ...event, meta: { ...event.meta, attempt: 2 } })).status).toBe(200);
    });

    it('leaves the run as it was after all of them', async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await readRun(runId)).toMatchObject({ status: 'ringing', is_completed: false });
    });
  });

  it('ends the run failed with invalid_number when Telnyx refuses the number', async () => {
    fake.failNext('invalid_number');
    const runId = await trigger(recordedConfigId, '+14155550177');
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to fail');
    expect(run).toMatchObject({ status: 'failed', end_reason: 'invalid_number' });
    expect(dialsFor(runId)).toHaveLength(1);
    expect(fake.callForRun(runId)).toBeUndefined();
  });

  it('dials again after backoff when Telnyx throttles, and places exactly one call', async () => {
    fake.throttleNext(1);
    const runId = await trigger(recordedConfigId, '+14155550178');
    const call = await callFor(runId);
    expect(dialsFor(runId)).toHaveLength(2);
    expect([...fake.calls.values()].filter((placed) => placed.clientState === call.clientState)).toHaveLength(1);
    await fake.sendCallEvent(call.callControlId, 'call.hangup', { hangup_cause: 'user_busy' });
    expect(await runReaches(runId, (run) => run.is_completed === true, 'the run to end')).toMatchObject({ status: 'busy' });
  });

  it('ends an answered call completed, with its duration and recording, whatever hang-up cause Telnyx gives', async () => {
    const runId = await trigger(recordedConfigId, '+14155550176');
    const call = await callFor(runId);
    await fake.sendCallEvent(call.callControlId, 'call.initiated');
    const answeredAt = new Date(Date.now() - 20_000);
    call.answeredAt = answeredAt;
    expect((await fake.sendEvent(call.webhookUrl!, fake.callEvent(call.callControlId, 'call.answered', {}, answeredAt))).status).toBe(200);
    await runReaches(runId, (run) => run.status === 'in_progress', 'the run to be answered');
    // A cause outside Telnyx's table of ours: on an unanswered call it ends the run failed with it (below).
    expect((await fake.sendCallEvent(call.callControlId, 'call.hangup', { hangup_cause: 'unspecified' })).status).toBe(200);
    const recordingUrl = fake.addRecording(silentWav(1));
    expect((await fake.sendCallEvent(call.callControlId, 'call.recording.saved', { recording_urls: { wav: recordingUrl } })).status).toBe(200);

    const run = await runReaches(runId, (current) => current.is_completed === true && current.recording_url !== null, 'the run to complete');
    expect(run).toMatchObject({ status: 'completed', end_reason: 'completed' });
    expect(run.duration_seconds).toBeGreaterThanOrEqual(19);
    const ended = run.logs.events.find((entry: { event: string }) => entry.event === 'carrier.hangup_after_answer');
    expect(ended).toMatchObject({ detail: { reason: 'unspecified', reported_as: 'failed' } });
    expect((await fetch(run.recording_url)).status).toBe(200);

    // The retry of such a hang-up whose move was stored before its job stopped still finishes the run.
    const retried = await trigger(recordedConfigId, '+14155550174');
    const retriedCall = await callFor(retried);
    await fake.sendEvent(retriedCall.webhookUrl!, fake.callEvent(retriedCall.callControlId, 'call.answered', {}, new Date(Date.now() - 10_000)));
    await runReaches(retried, (current) => current.status === 'in_progress', 'the run to be answered');
    await apps.dataSource.query(`UPDATE workflow_runs SET status = 'completed', ended_at = now(), end_reason = 'completed' WHERE id = $1`, [retried]);
    expect((await fake.sendCallEvent(retriedCall.callControlId, 'call.hangup', { hangup_cause: 'unspecified' })).status).toBe(200);
    // The run waits for the carrier's recording, as any completed call of a recording configuration does.
    const finished = await runReaches(retried, (current) => current.duration_seconds !== null, 'the retried hang-up to fill the duration');
    expect(finished.status).toBe('completed');
    expect(finished.duration_seconds).toBeGreaterThanOrEqual(9);
    await fake.sendCallEvent(retriedCall.callControlId, 'call.recording.saved', { recording_urls: { wav: fake.addRecording(silentWav(1)) } });
    await runReaches(retried, (current) => current.is_completed === true && current.recording_url !== null, 'the retried run to complete');

    // Not answered, the same cause still ends the run failed with it, once no answer came within LATE_ANSWER_WAIT_MS
    // of the hang-up reaching us (its job delayed meanwhile, spending no attempt).
    const unanswered = await trigger(recordedConfigId, '+14155550175');
    const other = await callFor(unanswered);
    const hungUp = Date.now();
    await fake.sendCallEvent(other.callControlId, 'call.hangup', { hangup_cause: 'unspecified' });
    const failed = await runReaches(unanswered, (current) => current.is_completed === true, 'the run to end');
    expect(failed).toMatchObject({ status: 'failed', end_reason: 'unspecified' });
    // Ended when the wait was over (its end time is the carrier's time of the hang-up; the record's change is ours).
    expect(Date.parse(failed.updated_at) - hungUp).toBeGreaterThanOrEqual(LATE_ANSWER_WAIT_MS - 1_000);
  });

  it('ends a call completed when its hang-up, with a cause that does not tell, is delivered before its answer', async () => {
    const runId = await trigger(recordedConfigId, '+14155550173');
    const call = await callFor(runId);
    await fake.sendCallEvent(call.callControlId, 'call.initiated');
    await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    const answeredAt = new Date(Date.now() - 12_000);
    call.answeredAt = answeredAt;
    expect((await fake.sendCallEvent(call.callControlId, 'call.hangup', { hangup_cause: 'unspecified' })).status).toBe(200);
    // The hang-up's job waits for an answer that may be on its way: the run is not failed meanwhile.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await readRun(runId)).status).toBe('ringing');
    expect((await fake.sendEvent(call.webhookUrl!, fake.callEvent(call.callControlId, 'call.answered', {}, answeredAt))).status).toBe(200);
    await fake.sendCallEvent(call.callControlId, 'call.recording.saved', { recording_urls: { wav: fake.addRecording(silentWav(1)) } });

    const run = await runReaches(runId, (current) => current.is_completed === true && current.recording_url !== null, 'the run to complete');
    expect(run).toMatchObject({ status: 'completed', end_reason: 'completed' });
    expect(run.duration_seconds).toBeGreaterThanOrEqual(11);
    expect(run.logs.events.map((entry: { event: string }) => entry.event)).toContain('carrier.hangup_after_answer');
  });

  it('hangs up on an answering machine when the configuration says so, and records who answered', async () => {
    const runId = await trigger(machineConfigId, '+14155550179');
    const call = await callFor(runId);
    expect(dialsFor(runId)[0].body).toMatchObject({ answering_machine_detection: 'premium' });
    await fake.sendCallEvent(call.callControlId, 'call.initiated');
    await fake.sendCallEvent(call.callControlId, 'call.answered');
    // The verdict comes over a minute after the dial (events backed up): the call is known answered, and ended all the same.
    fake.backdate(call.callControlId, 90);
    await fake.sendCallEvent(call.callControlId, 'call.machine.premium.detection.ended', { result: 'machine' });
    // We ask Telnyx to hang up; Telnyx then reports the hang-up itself.
    await waitFor(async () => (fake.calls.get(call.callControlId)?.hungUpByApi ? true : undefined), { what: 'the hang-up command' });
    const hangup = fake.requests.find((request) => request.path === `/v2/calls/${call.callControlId}/actions/hangup`);
    expect(hangup?.headers.authorization).toBe(`Bearer ${fake.apiKey}`);
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to end');
    expect(run).toMatchObject({ status: 'completed', gathered_context: { answered_by: 'machine' } });
    expect(run.logs.events.map((event: { event: string }) => event.event)).toContain('dialer.machine_hangup');
  });

  it('hangs up on an answering machine when detection is on and machine_action is left out, as Telnyx reads it', async () => {
    const defaultActionConfigId = await createConfiguration({ answering_machine_detection: true });
    const runId = await trigger(defaultActionConfigId, '+14155550175');
    const call = await callFor(runId);
    expect(dialsFor(runId)[0].body).toMatchObject({ answering_machine_detection: 'premium' });
    await fake.sendCallEvent(call.callControlId, 'call.initiated');
    await fake.sendCallEvent(call.callControlId, 'call.answered');
    await runReaches(runId, (run) => run.status === 'in_progress', 'the run to be answered');
    await fake.sendCallEvent(call.callControlId, 'call.machine.premium.detection.ended', { result: 'machine' });
    // The agent was connected at dial time: our hang-up is the only thing that keeps it from talking to the machine.
    await waitFor(async () => (fake.calls.get(call.callControlId)?.hungUpByApi ? true : undefined), { what: 'the hang-up command' });
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to end');
    expect(run).toMatchObject({ status: 'completed', gathered_context: { answered_by: 'machine' } });
    expect(run.logs.events.map((event: { event: string }) => event.event)).toContain('dialer.machine_hangup');
  });

  it('applies a price that comes before the hang-up only after it, so the hang-up still says how the call ended', async () => {
    const runId = await trigger(recordedConfigId, '+14155550176');
    const call = await callFor(runId);
    await fake.sendCallEvent(call.callControlId, 'call.initiated');
    await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    // Telnyx promises no order: here its call.cost is delivered before its call.hangup.
    expect((await fake.sendCallEvent(call.callControlId, 'call.cost', { total_cost: '0.0000', billed_duration_secs: 0 })).status).toBe(200);
    const queue = apps.dialer!.get<Queue>(getQueueToken(QueueName.CallEvents));
    await waitFor(async () => ((await queue.getJob(`run-${runId}-cost-cost`))?.attemptsMade ?? 0) >= 1 || undefined, {
      what: 'the price to be tried once',
    });
    expect(await readRun(runId)).toMatchObject({ status: 'ringing', is_completed: false });

    expect((await fake.sendCallEvent(call.callControlId, 'call.hangup', { hangup_cause: 'user_busy' })).status).toBe(200);
    const run = await runReaches(runId, (current) => current.is_completed === true && current.cost_info?.total_cost !== undefined, 'the price');
    expect(run).toMatchObject({ status: 'busy', answered_at: null, cost_info: { total_cost: 0, currency: 'USD' } });
  });

  it('answers 502 carrier_unreachable, to try again, when Telnyx throttles the cancel, and hangs up on the retry', async () => {
    const runId = await trigger(recordedConfigId, '+14155550181');
    const call = await callFor(runId);
    await fake.sendCallEvent(call.callControlId, 'call.initiated');
    await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    fake.failNextStatusRead('throttle');
    const throttled = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey });
    expect({ status: throttled.status, code: throttled.body.code }).toEqual({ status: 502, code: 'carrier_unreachable' });
    expect(fake.calls.get(call.callControlId)?.hungUpByApi).toBeFalsy();
    const retried = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey });
    expect(retried.status).toBe(202);
    await runReaches(runId, (current) => current.status === 'canceled', 'the run to end canceled');
  });

  it('hangs up a ringing call through Telnyx and ends the run canceled', async () => {
    const runId = await trigger(recordedConfigId, '+14155550180');
    const call = await callFor(runId);
    await fake.sendCallEvent(call.callControlId, 'call.initiated');
    await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    const response = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey });
    expect(response.status).toBe(202);
    await waitFor(async () => (fake.calls.get(call.callControlId)?.hungUpByApi ? true : undefined), { what: 'the hang-up command' });
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to end');
    expect(run).toMatchObject({ status: 'canceled', answered_at: null });
  });

  it('hangs up, when the reaper ends its run, an answered call Telnyx lets talk on past its maximum duration, and records what Telnyx bills', async () => {
    const runId = await trigger(recordedConfigId, '+14155550189');
    const call = await callFor(runId);
    await fake.sendCallEvent(call.callControlId, 'call.initiated');
    await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    await fake.sendCallEvent(call.callControlId, 'call.answered');
    await runReaches(runId, (run) => run.status === 'in_progress', 'the run to be answered');

    const reaped = await carrier.reapedPastItsLimit(runId);

    expect(reaped).toMatchObject({ status: 'failed', end_reason: 'max_duration_exceeded', is_completed: true });
    const hangups = fake.requests.filter((request) => request.method === 'POST' && request.path === `/v2/calls/${call.callControlId}/actions/hangup`);
    expect(hangups).toHaveLength(1);
    expect(fake.calls.get(call.callControlId)).toMatchObject({ isAlive: false, hungUpByApi: true });
    // Telnyx reports no talk time with the hang-up: the run's is from answer to the reaper's end; its bill brings the price and the seconds billed.
    expect((await fake.sendCallEvent(call.callControlId, 'call.cost', { total_cost: '0.0300', billed_duration_secs: 180 })).status).toBe(200);
    const billed = await runReaches(runId, (run) => run.cost_info?.total_cost !== undefined, 'what Telnyx billed');
    expect(billed).toMatchObject({
      status: 'failed',
      end_reason: 'max_duration_exceeded',
      cost_info: { call_duration_seconds: billed.duration_seconds, billed_duration_seconds: 180, total_cost: 0.03, currency: 'USD' },
    });
    // The timestamps the API shows are to the millisecond; the duration is from the stored ones.
    expect(billed.duration_seconds).toBeCloseTo((Date.parse(billed.ended_at) - Date.parse(billed.answered_at)) / 1000, 2);
  });

  describe('a call answered while its answer event was lost', () => {
    const hangupsOf = (call: TelnyxFakeCall) =>
      fake.requests.filter((request) => request.method === 'POST' && request.path === `/v2/calls/${call.callControlId}/actions/hangup`);

    /** A ringing run whose call the callee picked up `secondsAgo` after a `call.answered` that never reached us. */
    async function answeredUnbeknown(to: string, secondsAgo: number): Promise<{ runId: number; call: TelnyxFakeCall }> {
      const runId = await trigger(recordedConfigId, to);
      const call = await callFor(runId);
      await fake.sendCallEvent(call.callControlId, 'call.initiated');
      await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
      fake.answerQuietly(call.callControlId);
      fake.backdate(call.callControlId, secondsAgo);
      return { runId, call };
    }

    it('is followed as answered by the reaper past the ring timeout, not hung up: Telnyx would have ended an unanswered one', async () => {
      const { runId, call } = await answeredUnbeknown('+14155550186', 200);
      await apps.dataSource.query(`UPDATE workflow_runs SET status_changed_at = now() - interval '200 seconds' WHERE id = $1`, [runId]);

      const answered = await runReaches(runId, (run) => run.status === 'in_progress', 'the reaper to find the call answered');
      expect(answered).toMatchObject({ is_completed: false, end_reason: null });
      expect(Date.parse(answered.answered_at)).toBe(call.startTime.getTime() + 30_000);
      expect(hangupsOf(call)).toHaveLength(0);
      expect(fake.calls.get(call.callControlId)).toMatchObject({ isAlive: true });

      // The call's end is followed as any answered call's: the run completes (its artifacts then come as usual).
      await fake.sendCallEvent(call.callControlId, 'call.hangup');
      const ended = await runReaches(runId, (run) => run.status === 'completed', 'the run to complete');
      expect(ended.end_reason).not.toBe('ring_timeout');
    });

    it('is ended when the reaper could not look it up and gave its run up: the run is closed, the call must not talk on', async () => {
      const { runId, call } = await answeredUnbeknown('+14155550188', 200);
      fake.failNextStatusRead('unavailable');
      await apps.dataSource.query(`UPDATE workflow_runs SET status_changed_at = now() - interval '200 seconds' WHERE id = $1`, [runId]);

      const failed = await runReaches(runId, (run) => run.status === 'failed', 'the reaper to give the run up');
      expect(failed).toMatchObject({ end_reason: 'ring_timeout' });
      await waitFor(async () => (fake.calls.get(call.callControlId)?.hungUpByApi ? true : undefined), { what: 'the hang-up command' });
      expect(hangupsOf(call)).toHaveLength(1);
    });

    it('cannot be canceled once it is known to be answered', async () => {
      const { runId, call } = await answeredUnbeknown('+14155550187', 90);

      const response = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey });

      expect(response.status).toBe(409);
      expect(response.body).toMatchObject({ code: 'run_not_cancelable', message: expect.stringContaining('answered') });
      expect(hangupsOf(call)).toHaveLength(0);
      expect(fake.calls.get(call.callControlId)).toMatchObject({ isAlive: true });
      await fake.sendCallEvent(call.callControlId, 'call.hangup');
      await runReaches(runId, (run) => run.status === 'completed', 'the run to complete');
    });
  });
});
