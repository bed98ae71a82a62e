import { getQueueToken } from '@nestjs/bullmq';
import { Job, Queue } from 'bullmq';
import { WorkflowRunStore } from '@app/persistence';
import { CallEventsQueue, CallsQueue, QueueName } from '@app/queue';
import { TelephonyProviders } from '@app/telephony';
import { TwilioProvider } from '../../libs/telephony/src/twilio/twilio.provider';
import { CallEventApplier, PRICE_LOOKUP_DELAYS_MS, priceLookupJobId } from '../../apps/dialer/src/call-events/call-event-applier.service';
import { TwilioFake } from '../fakes/twilio-fake';
import { TestOrganization } from '../support/fixtures';
import { TestApps } from '../support/test-apps';
import { storedRunIds } from '../support/stored-run-ids';
import { waitFor } from '../support/wait-for';
import { AGENT_TURNS, CALLEE, eventsOf, FROM, useCarrierHarness } from './carrier-harness';

describe('placing calls through Twilio', () => {
  const fake = new TwilioFake();
  const carrier = useCarrierHarness({
    fake,
    provider: 'twilio',
    name: 'Twilio',
    apiUrlEnv: 'TWILIO_API_URL',
    // Found by the run's callback URL.
    findCall: (runId) => [...fake.calls.values()].find((call) => call.statusCallback?.endsWith(`/status/${runId}`)),
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

  const dialsFor = (runId: number) => fake.dialRequests().filter((request) => request.fields.StatusCallback?.endsWith(`/status/${runId}`));

  it('places the call, hands it to the agent runtime, and completes the run with Twilio duration, price and recording', async () => {
    const runId = await trigger(recordedConfigId);
    const call = await callFor(runId);

    const [dial] = dialsFor(runId);
    const basic = Buffer.from(`${fake.accountSid}:${fake.authToken}`).toString('base64');
    expect(dial.headers.authorization).toBe(`Basic ${basic}`);
    expect(dial.headers['content-type']).toMatch(/^application\/x-www-form-urlencoded/);
    expect(dial.path).toBe(`/2010-04-01/Accounts/${fake.accountSid}/Calls.json`);
    const urls = callbacks(runId);
    expect(dial.fields).toMatchObject({
      To: CALLEE,
      From: FROM,
      Url: urls.answerUrl,
      StatusCallback: urls.statusUrl,
      Record: 'true',
      RecordingStatusCallback: urls.recordingUrl,
    });
    expect(dial.form.filter(([name]) => name === 'StatusCallbackEvent').map(([, value]) => value)).toEqual([
      'initiated',
      'ringing',
      'answered',
      'completed',
    ]);

    expect((await fake.ring(call.sid))?.status).toBe(200);
    await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    const answer = await fake.answer(call.sid);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/xml/);
    expect(answer.body).toContain('<Connect><Stream url="ws://127.0.0.1:8090/media">');
    const token = /<Parameter name="session_token" value="([^"]+)"\/>/.exec(answer.body)?.[1];
    expect(token).toBeDefined();
    await runReaches(runId, (run) => run.status === 'in_progress', 'the run to be answered');

    // Play the agent runtime.
    await playAgent(runId, token!, call.sid);

    expect((await fake.complete(call.sid, { durationSeconds: 37, price: '-0.02150', priceUnit: 'USD' }))?.status).toBe(200);
    // Twilio announces the recording after the call has ended.
    await runReaches(runId, (current) => current.status === 'completed', 'the call to end');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await fake.recordingReady(call.sid, { durationSeconds: 2 })).status).toBe(200);

    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to complete');
    expect(run).toMatchObject({ status: 'completed', duration_seconds: 37, provider_call_id: call.sid });
    expect(run.cost_info).toMatchObject({ total_cost: 0.0215, currency: 'USD' });
    const transcript = await apps.client.get(run.transcript_url);
    expect(transcript.status).toBe(200);
    expect(transcript.body.turns).toEqual(AGENT_TURNS);
    expect(run.recording_url.startsWith(apps.baseUrl)).toBe(true);
    expect(run.recording_url).not.toContain(fake.url);
    const recording = await fetch(run.recording_url);
    expect(recording.status).toBe(200);
    expect(Buffer.from(await recording.arrayBuffer())).toEqual(TwilioFake.recordingBytes(2));
    // Our service fetched the recording from Twilio with the account's credentials.
    const download = fake.requests.find((request) => request.method === 'GET' && request.path.includes('/Recordings/'));
    expect(download?.headers.authorization).toBe(`Basic ${basic}`);
  });

  describe('webhooks that Twilio did not send', () => {
    let runId: number;
    let sid: string;
    let statusUrl: string;

    beforeAll(async () => {
      runId = await trigger(recordedConfigId);
      sid = (await callFor(runId)).sid;
      ({ statusUrl } = callbacks(runId));
      await fake.ring(sid);
      await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    });
    afterAll(async () => {
      await fake.end(sid, 'no-answer');
    });

    it('answers 403 to a callback signed with another auth token, and the run does not move', async () => {
      const before = await readRun(runId);
      expect(before).toMatchObject({ status: 'ringing', is_completed: false, duration_seconds: null });
      const response = await fake.sendStatus(statusUrl, fake.callbackFields(sid, 'completed', { CallDuration: '9' }), {
        authToken: 'ffffffffffffffffffffffffffffffff',
      });
      expect(response.status).toBe(403);
      expect(JSON.parse(response.body).code).toBe('webhook_signature_invalid');
      // A callback let through is applied by the dialer, off the request: the same pause as the last test here gives
      // it the time to show. Nothing the callback would have moved changed, nor did any carrier event reach the log
      // (the dialer's own bookkeeping may still write to the run meanwhile).
      await new Promise((resolve) => setTimeout(resolve, 300));
      const carrierView = (run: any) => ({
        status: run.status,
        is_completed: run.is_completed,
        duration_seconds: run.duration_seconds,
        ended_at: run.ended_at,
        end_reason: run.end_reason,
        carrier_events: run.logs.events.filter((entry: { event: string }) => entry.event.startsWith('carrier.')),
      });
      expect(carrierView(await readRun(runId))).toEqual(carrierView(before));
    });

    it('answers 403 when a signed field was changed on the way', async () => {
      const fields = fake.callbackFields(sid, 'in-progress');
      const signature = fake.sign(statusUrl, fields);
      const response = await fake.sendStatus(statusUrl, { ...fields, CallStatus: 'completed' }, { signature });
      expect(response.status).toBe(403);
    });

    it('answers 401 to an unsigned callback', async () => {
      const response = await fake.sendStatus(statusUrl, fake.callbackFields(sid, 'completed'), { signature: null });
      expect(response.status).toBe(401);
      expect(JSON.parse(response.body).code).toBe('webhook_unsigned');
    });

    it('answers 403 to a validly signed status callback replayed hours later', async () => {
      const stale = new Date(Date.now() - 3 * 3600 * 1000).toUTCString().replace('GMT', '+0000');
      const response = await fake.sendStatus(statusUrl, fake.callbackFields(sid, 'completed', { CallDuration: '9', Timestamp: stale }));
      expect(response.status).toBe(403);
    });

    it('answers 403 to an exact replay of a callback already delivered', async () => {
      const fields = fake.callbackFields(sid, 'ringing');
      expect((await fake.sendStatus(statusUrl, fields)).status).toBe(200);
      expect((await fake.sendStatus(statusUrl, fields)).status).toBe(403);
    });

    it('answers 503 webhook_in_progress to a copy sent while the first is handled, and takes a copy once the first failed', async () => {
      const fields = fake.callbackFields(sid, 'ringing', { SequenceNumber: '7' });
      const queue = apps.api.get(CallEventsQueue);
      let fail: (error: Error) => void = () => undefined;
      const held = jest.spyOn(queue, 'enqueueEvent').mockImplementationOnce(() => new Promise<void>((_, reject) => (fail = reject)));
      try {
        const first = fake.sendStatus(statusUrl, fields);
        await waitFor(async () => (held.mock.calls.length > 0 ? true : undefined), { what: 'the first copy to be handled' });
        const during = await fake.sendStatus(statusUrl, fields);
        expect(during.status).toBe(503);
        expect(JSON.parse(during.body).code).toBe('webhook_in_progress');
        expect(during.headers.get('retry-after')).toBe('1');
        fail(new Error('the queue went away'));
        expect((await first).status).toBe(500);
      } finally {
        held.mockRestore();
      }
      // Forgotten with its failure: the carrier's retry is taken, and a copy of that one is a replay.
      expect((await fake.sendStatus(statusUrl, fields)).status).toBe(200);
      expect((await fake.sendStatus(statusUrl, fields)).status).toBe(403);
    });

    it('leaves the run as it was after all of them', async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await readRun(runId)).toMatchObject({ status: 'ringing', is_completed: false, duration_seconds: null });
    });
  });

  it('takes the webhooks of a call whose run was stored naming the configuration provider before a change (a stale gateway)', async () => {
    // A gateway whose lookups (up to 5 s stale) still held this configuration as a Telnyx one stored the run.
    const [{ id: apiKeyId }]: Array<{ id: number }> = await apps.dataSource.query(`SELECT id FROM api_keys WHERE organization_id = $1 LIMIT 1`, [
      org.organizationId,
    ]);
    const { workflowId, triggerUuid } = carrier.workflow;
    const route = { telephonyConfigurationId: machineConfigId, workflowId, environment: 'production' as const, triggerUuid };
    const [runId] = storedRunIds(
      await apps.api.get(WorkflowRunStore).insertQueued([
        { ...route, organizationId: org.organizationId, apiKeyId, provider: 'telnyx', phoneNumber: '+14155550178', initialContext: {} },
      ]),
    );
    await apps.api.get(CallsQueue).enqueuePlaceCall([{ runId, organizationId: org.organizationId, route }]);

    const call = await callFor(runId);
    expect(dialsFor(runId)).toHaveLength(1);
    expect((await fake.ring(call.sid))?.status).toBe(200);
    expect((await fake.complete(call.sid, { durationSeconds: 0, price: null }))?.status).toBe(200);
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the call to end');
    expect(run).toMatchObject({ mode: 'twilio', is_completed: true });
    expect(eventsOf(run)).toEqual(expect.arrayContaining(['dialer.provider_changed', 'carrier.ringing']));
  });

  it('ends the run failed with invalid_number when Twilio refuses the number', async () => {
    fake.failNext({ status: 400, code: 21211, message: "The 'To' number is not a valid phone number." });
    const runId = await trigger(recordedConfigId, '+14155550177');
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to fail');
    expect(run).toMatchObject({ status: 'failed', end_reason: 'invalid_number' });
    expect(dialsFor(runId)).toHaveLength(1);
    expect([...fake.calls.values()].filter((call) => call.statusCallback?.endsWith(`/status/${runId}`))).toHaveLength(0);
  });

  it('dials again after backoff when Twilio throttles, and places exactly one call', async () => {
    fake.throttleNext();
    const runId = await trigger(recordedConfigId, '+14155550178');
    const call = await callFor(runId);
    expect(dialsFor(runId)).toHaveLength(2);
    expect([...fake.calls.values()].filter((placed) => placed.statusCallback?.endsWith(`/status/${runId}`))).toHaveLength(1);
    await runReaches(runId, (run) => run.status === 'dialing' && run.provider_call_id === call.sid, 'the run to hold the call SID');
    await fake.end(call.sid, 'busy');
    expect(await runReaches(runId, (run) => run.is_completed === true, 'the run to end')).toMatchObject({ status: 'busy' });
  });

  it.each([
    ['says so', '+14155550179', () => machineConfigId],
    ['turns detection on and leaves machine_action out', '+14155550175', () => createConfiguration({ answering_machine_detection: true })],
  ])('hangs up on an answering machine when the configuration %s, records who answered, and ends the run at once', async (_case, to, configuration) => {
    const runId = await trigger(await configuration(), to);
    const call = await callFor(runId);
    expect(dialsFor(runId)[0].fields.MachineDetection).toBe('Enable');
    await fake.ring(call.sid);
    const answer = await fake.answer(call.sid, { answeredBy: 'machine_start' });
    expect(answer.status).toBe(200);
    // The TwiML itself hangs up: no audio goes to the agent.
    expect(answer.body).toContain('<Hangup/>');
    expect(answer.body).not.toContain('<Stream');
    await runReaches(runId, (run) => run.gathered_context?.answered_by === 'machine', 'the machine verdict');
    await fake.complete(call.sid, { durationSeconds: 3 });
    // No agent was connected, so none is waited for: well within the 20 s a completed call waits for an agent report.
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to end');
    expect(run).toMatchObject({ status: 'completed', gathered_context: { answered_by: 'machine' }, duration_seconds: 3 });
    expect(eventsOf(run)).toContain('dialer.machine_hangup');
  });

  it('completes a recorded call whose hang-up is applied before its answer only once its recording is stored', async () => {
    const runId = await trigger(recordedConfigId, '+14155550174');
    const call = await callFor(runId);
    await fake.ring(call.sid);
    await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    // The answer's callbacks are still on their way (or lost) when the hang-up is applied.
    await fake.complete(call.sid, { durationSeconds: 21 });
    await runReaches(runId, (run) => run.status === 'completed', 'the hang-up to be applied');
    const queue = apps.dialer!.get<Queue>(getQueueToken(QueueName.CallEvents));
    await waitFor(async () => {
      const { active, waiting } = await queue.getJobCounts('active', 'waiting');
      return active + waiting === 0 ? true : undefined;
    }, {
      what: 'the hang-up to be handled',
    });
    expect(await readRun(runId)).toMatchObject({ status: 'completed', answered_at: null, is_completed: false, recording_url: null });

    expect((await fake.recordingReady(call.sid, { durationSeconds: 2 })).status).toBe(200);
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to complete');
    const recording = await fetch(run.recording_url);
    expect(Buffer.from(await recording.arrayBuffer())).toEqual(TwilioFake.recordingBytes(2));
    expect(eventsOf(run)).not.toContain('artifacts.late_recording_stored');
  });

  describe('a call Twilio had not priced yet at the hang-up', () => {
    const queue = () => apps.dialer!.get<Queue>(getQueueToken(QueueName.CallEvents));
    /** The run's `lookup`-th price look-up after the hang-up, once enqueued; checked to wait for its delay. */
    async function delayedLookup(runId: number, lookup: number): Promise<Job> {
      const job = await waitFor(async () => (await queue().getJob(priceLookupJobId(runId, lookup))) ?? undefined, {
        what: `price look-up ${lookup} of run ${runId}`,
      });
      expect(await job.isDelayed()).toBe(true);
      expect(job.opts.delay).toBe(PRICE_LOOKUP_DELAYS_MS[lookup - 1]);
      return job;
    }
    async function endedUnpriced(to: string): Promise<{ runId: number; sid: string }> {
      const runId = await trigger(recordedConfigId, to);
      const call = await callFor(runId);
      await fake.ring(call.sid);
      await fake.answer(call.sid);
      await fake.complete(call.sid, { durationSeconds: 20, price: null });
      await runReaches(runId, (run) => run.status === 'completed', 'the call to end');
      return { runId, sid: call.sid };
    }

    it('asks Twilio again after a delay, and stores the price it shows then', async () => {
      const { runId, sid } = await endedUnpriced('+14155550184');
      const first = await delayedLookup(runId, 1);
      expect((await readRun(runId)).cost_info.total_cost).toBeUndefined();

      fake.setCallStatus(sid, { price: '-0.01800', priceUnit: 'USD' });
      await first.promote();
      const run = await runReaches(runId, (current) => current.cost_info?.total_cost !== undefined, 'the price');
      expect(run.cost_info).toMatchObject({ total_cost: 0.018, currency: 'USD', call_duration_seconds: 20 });
      expect(await queue().getJob(priceLookupJobId(runId, 2))).toBeUndefined();
    });

    it('is looked up by the retry of a hang-up whose move was stored before its job stopped, short of the look-up', async () => {
      const runId = await trigger(recordedConfigId, '+14155550186');
      const call = await callFor(runId);
      await fake.ring(call.sid);
      await fake.answer(call.sid);
      await fake.complete(call.sid, { durationSeconds: 9, price: '-0.01000' });
      await runReaches(runId, (run) => run.cost_info?.total_cost !== undefined, 'the price');
      // The run as that first try left it: completed, without a price.
      await apps.dataSource.query(`UPDATE workflow_runs SET cost_info = cost_info - 'total_cost' - 'currency' WHERE id = $1`, [runId]);

      const retried = await apps.dialer!.get(CallEventApplier).apply({
        runId,
        organizationId: org.organizationId,
        provider: 'twilio',
        providerCallId: call.sid,
        type: 'completed',
        occurredAt: new Date().toISOString(),
        durationSeconds: 9,
      });
      expect(retried).toBe(false);
      expect((await readRun(runId)).cost_info).toMatchObject({ total_cost: 0.01, currency: 'USD', call_duration_seconds: 9 });
    });

    it('stops after the last look-up, and notes that Twilio never showed one', async () => {
      const { runId } = await endedUnpriced('+14155550185');
      for (let lookup = 1; lookup <= PRICE_LOOKUP_DELAYS_MS.length; lookup++) await (await delayedLookup(runId, lookup)).promote();
      const run = await runReaches(runId, (current) => eventsOf(current).includes('carrier.price_unavailable'), 'the look-ups to stop');
      expect(run.cost_info.total_cost).toBeUndefined();
      expect(await queue().getJob(priceLookupJobId(runId, PRICE_LOOKUP_DELAYS_MS.length + 1))).toBeUndefined();
    });
  });

  it('cancels a ringing call through Twilio and ends the run canceled', async () => {
    const runId = await trigger(recordedConfigId, '+14155550180');
    const call = await callFor(runId);
    await fake.ring(call.sid);
    await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    const response = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey });
    expect(response.status).toBe(202);
    const hangup = await waitFor(
      async () => fake.requests.find((request) => request.method === 'POST' && request.path.endsWith(`/Calls/${call.sid}.json`)),
      { what: 'the cancel request' },
    );
    expect(hangup.fields.Status).toBe('canceled');
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to end');
    expect(run).toMatchObject({ status: 'canceled', answered_at: null });
    expect(fake.call(call.sid).status).toBe('canceled');
  });

  it('answers 502 carrier_unreachable when Twilio cannot be asked to hang up, 409 when it refuses, and the run rings on until a cancel gets through', async () => {
    const runId = await trigger(recordedConfigId, '+14155550182');
    const call = await callFor(runId);
    await fake.ring(call.sid);
    await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    fake.failNext('unavailable');
    const refused = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey });
    expect(refused.status).toBe(502);
    expect(refused.body).toMatchObject({ code: 'carrier_unreachable' });
    expect((await readRun(runId)).status).toBe('ringing');
    // A refusal (here the account's credentials) is not worth retrying: 409.
    fake.failNext({ status: 401, code: 20003, message: 'Authenticate' });
    const rejected = await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey });
    expect(rejected.status).toBe(409);
    expect(rejected.body).toMatchObject({ code: 'run_not_cancelable' });
    expect((await readRun(runId)).status).toBe('ringing');

    expect((await apps.client.post(`${runPath(runId)}/cancel`, undefined, { key: org.adminKey })).status).toBe(202);
    const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to end');
    expect(run).toMatchObject({ status: 'canceled' });
  });

  it('hangs up, with no agent, a call answered after its run ended', async () => {
    const runId = await trigger(recordedConfigId, '+14155550183');
    const call = await callFor(runId);
    await fake.ring(call.sid);
    await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    // The reaper gave the ringing call up (its hang-up did not reach Twilio); then the callee picks up.
    await apps.dataSource.query(`UPDATE workflow_runs SET status = 'failed', end_reason = 'ring_timeout', is_completed = true WHERE id = $1`, [runId]);
    const answer = await fake.answer(call.sid);
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('<Hangup/>');
    expect(answer.body).not.toContain('<Stream');
    const run = await readRun(runId);
    expect(run).toMatchObject({ status: 'failed', end_reason: 'ring_timeout' });
    expect(eventsOf(run)).toContain('api.answered_after_end');
  });

  it('hangs up, when the reaper ends its run, an answered call Twilio lets talk on past its maximum duration, and records what Twilio bills', async () => {
    const runId = await trigger(recordedConfigId, '+14155550191');
    const call = await callFor(runId);
    await fake.ring(call.sid);
    await fake.answer(call.sid);
    await runReaches(runId, (run) => run.status === 'in_progress', 'the run to be answered');
    // What Twilio will bill once the call is hung up.
    fake.setCallStatus(call.sid, { duration: 150, price: '-0.03750', priceUnit: 'USD' });

    const reaped = await carrier.reapedPastItsLimit(runId);

    expect(reaped).toMatchObject({ status: 'failed', end_reason: 'max_duration_exceeded', is_completed: true });
    const updates = fake.requests.filter((request) => request.method === 'POST' && request.path.endsWith(`/Calls/${call.sid}.json`));
    expect(updates.map((request) => request.fields.Status)).toEqual(['completed']);
    expect(fake.call(call.sid).status).toBe('completed');
    // Twilio's report of the end it was asked for brings the billed duration, its look-up the price; the run stays as
    // the reaper ended it.
    const billed = await runReaches(runId, (run) => run.duration_seconds === 150 && run.cost_info.total_cost !== undefined, 'what Twilio billed');
    expect(billed).toMatchObject({
      status: 'failed',
      end_reason: 'max_duration_exceeded',
      cost_info: { call_duration_seconds: 150, total_cost: 0.0375, currency: 'USD' },
    });
  });

  it('ends a call answered unbeknown to us when the reaper gives its ringing run up without being able to look it up', async () => {
    const runId = await trigger(recordedConfigId, '+14155550192');
    const call = await callFor(runId);
    await fake.ring(call.sid);
    await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
    // The callee picked up, but neither the answer nor its callbacks reached us; then Twilio cannot be asked.
    fake.setCallStatus(call.sid, { status: 'in-progress', answeredAt: new Date() });
    fake.unreadableCalls.add(call.sid);
    let failed;
    try {
      await apps.dataSource.query(`UPDATE workflow_runs SET status_changed_at = now() - interval '200 seconds' WHERE id = $1`, [runId]);
      failed = await runReaches(runId, (run) => run.status === 'failed', 'the reaper to give the run up');
    } finally {
      fake.unreadableCalls.delete(call.sid);
    }

    expect(failed).toMatchObject({ end_reason: 'ring_timeout' });
    expect(fake.requests.some((request) => request.method === 'GET' && request.path.endsWith(`/Calls/${call.sid}.json`))).toBe(true);
    // `Status=canceled` would have left the answered call talking on: it is ended with `Status=completed`.
    await waitFor(async () => (fake.call(call.sid).status === 'completed' ? true : undefined), { what: 'the call to be hung up' });
    const updates = fake.requests.filter((request) => request.method === 'POST' && request.path.endsWith(`/Calls/${call.sid}.json`));
    expect(updates.map((request) => request.fields.Status)).toEqual(['completed']);
  });

  describe('a dial whose answer was lost, so the call SID was never learned', () => {
    const callsOf = (runId: number) => [...fake.calls.values()].filter((placed) => placed.statusCallback?.endsWith(`/status/${runId}`));

    const strandedDialingRun = (to: string, dialedSecondsAgo: number) => carrier.strandedDialingRun(recordedConfigId, to, dialedSecondsAgo);

    /** The dial request that dialer sent, as Twilio received it. */
    async function dialAsTheDialerDid(runId: number, to: string): Promise<string> {
      const urls = callbacks(runId);
      const form = new URLSearchParams({ To: to, From: FROM, Url: urls.answerUrl, Method: 'POST', StatusCallback: urls.statusUrl });
      for (const event of ['initiated', 'ringing', 'answered', 'completed']) form.append('StatusCallbackEvent', event);
      const response = await fetch(`${fake.url}/2010-04-01/Accounts/${fake.accountSid}/Calls.json`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`${fake.accountSid}:${fake.authToken}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: form.toString(),
      });
      if (response.status !== 201) throw new Error(`the dial answered ${response.status}: ${await response.text()}`);
      return ((await response.json()) as { sid: string }).sid;
    }

    it('finds the call Twilio placed by its numbers and time, follows it to the end, and never dials again', async () => {
      fake.failNext('reset');
      const runId = await trigger(recordedConfigId, '+14155550181');
      const call = await callFor(runId);
      const reconciled = await runReaches(runId, (run) => eventsOf(run).includes('dialer.reconciled'), 'the dialer to learn the call SID from Twilio');
      expect(reconciled).toMatchObject({ status: 'dialing', provider_call_id: call.sid });
      // The dialer asked Twilio's call list for its own numbers.
      const lists = fake.requests.filter((request) => request.method === 'GET' && request.path.endsWith('/Calls.json') && request.query.get('To') === '+14155550181');
      expect(lists.length).toBeGreaterThan(0);
      expect(lists.every((request) => request.query.get('From') === FROM)).toBe(true);

      await fake.ring(call.sid);
      await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
      await fake.end(call.sid, 'no-answer');
      const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to end');
      expect(run).toMatchObject({ status: 'no_answer', end_reason: 'no_answer', provider_call_id: call.sid });
      expect(eventsOf(run)).not.toContain('dialer.outcome_unknown');
      expect(dialsFor(runId)).toHaveLength(1);
      expect(callsOf(runId)).toHaveLength(1);
    });

    /**
     * A run of `firstConfigId` has its call to `to`; a run of
     * `secondConfigId` to the same number then gets no answer to its dial,
     * which Twilio never placed: its one match by numbers is the first run's
     * call, which it must not take.
     */
    async function secondDialLeavesTheFirstCallAlone(firstConfigId: number, secondConfigId: number, to: string): Promise<void> {
      const first = await trigger(firstConfigId, to);
      const call = await callFor(first);
      await runReaches(first, (run) => run.provider_call_id === call.sid, 'the first run to learn its call SID');
      const twilio = apps.dialer!.get(TelephonyProviders).get('twilio') as TwilioProvider;
      const timeout = twilio.requestTimeoutMs;
      twilio.requestTimeoutMs = 1_000;
      fake.failNext('timeout');
      try {
        const second = await trigger(secondConfigId, to);
        const unknown = await runReaches(second, (run) => eventsOf(run).includes('dialer.outcome_unknown'), 'the second dial to end unknown');
        expect(unknown).toMatchObject({ status: 'dialing', provider_call_id: null });
        expect(eventsOf(unknown)).not.toContain('dialer.reconciled');
        expect(await readRun(first)).toMatchObject({ provider_call_id: call.sid });
      } finally {
        twilio.requestTimeoutMs = timeout;
        await fake.end(call.sid, 'no-answer');
      }
    }

    it("does not take another open run's call to the same number for its own", async () => {
      await secondDialLeavesTheFirstCallAlone(recordedConfigId, recordedConfigId, '+14155550183');
    });

    it('does not take for its own the call of an open run of another configuration on the same Twilio account and number', async () => {
      // A second line of the same account and from number (another team's, or another client of one agency).
      const otherLine = await createConfiguration({ record: false });
      await secondDialLeavesTheFirstCallAlone(otherLine, recordedConfigId, '+14155550190');
    });

    it("lets the reaper leave alone another open run's call that matches a stranded run's numbers", async () => {
      const to = '+14155550184';
      const first = await trigger(recordedConfigId, to);
      const call = await callFor(first);
      await runReaches(first, (run) => run.provider_call_id === call.sid, 'the first run to learn its call SID');
      // As if the first run's call had been created in the stranded run's dial window.
      fake.setCallStatus(call.sid, { dateCreated: new Date(Date.now() - 89_000) });
      const listsBefore = fake.requests.filter((request) => request.method === 'GET' && request.query.get('To') === to).length;
      try {
        const stranded = await strandedDialingRun(to, 90);
        await waitFor(
          async () => (fake.requests.filter((request) => request.method === 'GET' && request.query.get('To') === to).length > listsBefore ? true : undefined),
          { what: 'the reaper to look the stranded run up at Twilio', timeoutMs: 20_000 },
        );
        // Its next round would have recorded the call by now.
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        expect(await readRun(stranded)).toMatchObject({ status: 'dialing', provider_call_id: null });
        expect(await readRun(first)).toMatchObject({ provider_call_id: call.sid });
      } finally {
        await fake.end(call.sid, 'no-answer');
      }
    });

    it('lets the reaper find the call of a dialer that died before the answer came, without dialing again', async () => {
      const to = '+14155550182';
      const runId = await strandedDialingRun(to, 90);
      const sid = await dialAsTheDialerDid(runId, to);
      fake.setCallStatus(sid, { dateCreated: new Date(Date.now() - 89_000) });

      await waitFor(
        async () => ((await readRun(runId)).provider_call_id === sid ? true : undefined),
        { what: 'the reaper to find the call at Twilio', timeoutMs: 20_000 },
      );
      await fake.ring(sid);
      await runReaches(runId, (run) => run.status === 'ringing', 'the run to ring');
      await fake.end(sid, 'busy');
      const run = await runReaches(runId, (current) => current.is_completed === true, 'the run to end');
      expect(run).toMatchObject({ status: 'busy', provider_call_id: sid });
      expect(dialsFor(runId)).toHaveLength(1);
      expect(callsOf(runId)).toHaveLength(1);
    });
  });
});
