import { AppConfig } from '@app/config';
import { TwilioFake } from '../../../../test/fakes/twilio-fake';
import { dialError, downloadElsewhere, specDial, specReference } from '../../../../test/fakes/provider-spec-calls';
import { rejection, waitFor, WebhookReceiver } from '../../../../test/fakes/webhook-receiver';
import { callbackUrlsFor } from '../callback-urls';
import { CarrierError } from '../carrier-error';
import { PlaceCallRequest } from '../telephony-provider';
import { TwilioApiError } from './twilio-api';
import { TwilioProvider } from './twilio.provider';

function providerFor(baseUrl: string): TwilioProvider {
  return new TwilioProvider({ carrierApiUrls: { twilio: baseUrl, telnyx: '', vonage: '', plivo: '' } } as unknown as AppConfig);
}

describe('TwilioProvider', () => {
  const fake = new TwilioFake();
  let provider: TwilioProvider;
  const receiver = new WebhookReceiver(() => fake.credentials, { answering_machine_detection: true, machine_action: 'hangup' });

  const dial = (overrides: Partial<PlaceCallRequest> = {}) => specDial(receiver, 'twilio', fake.credentials, overrides);
  const reference = (providerCallId: string | null) => specReference(fake.credentials, providerCallId);

  beforeAll(async () => {
    provider = providerFor(await fake.start());
    receiver.provider = provider;
    await receiver.start();
  });
  afterAll(async () => {
    await fake.stop();
    await receiver.stop();
  });
  afterEach(() => {
    fake.accountStatus = 'active';
    provider.requestTimeoutMs = 15_000;
  });

  describe('placing a call', () => {
    it('sends a form-encoded dial request with HTTP Basic auth and every parameter Twilio needs', async () => {
      const { providerCallId } = await provider.placeCall(dial());

      const request = fake.dialRequests().at(-1)!;
      expect(request.path).toBe(`/2010-04-01/Accounts/${fake.accountSid}/Calls.json`);
      expect(request.headers.authorization).toBe(`Basic ${Buffer.from(`${fake.accountSid}:${fake.authToken}`).toString('base64')}`);
      expect(request.headers['content-type']).toBe('application/x-www-form-urlencoded');
      const urls = callbackUrlsFor(receiver.base, 'twilio', 7);
      expect(request.form).toEqual([
        ['To', '+14155550123'],
        ['From', '+14155550100'],
        ['Url', urls.answerUrl],
        ['Method', 'POST'],
        ['StatusCallback', urls.statusUrl],
        ['StatusCallbackMethod', 'POST'],
        ['StatusCallbackEvent', 'initiated'],
        ['StatusCallbackEvent', 'ringing'],
        ['StatusCallbackEvent', 'answered'],
        ['StatusCallbackEvent', 'completed'],
        ['TimeLimit', '600'],
      ]);
      expect(providerCallId).toMatch(/^CA[0-9a-f]{32}$/);
      expect(fake.call(providerCallId)).toMatchObject({ status: 'queued', to: '+14155550123', timeLimit: 600 });
    });

    it('asks for synchronous machine detection that ends early when machines are hung up on', async () => {
      await provider.placeCall(dial({ settings: { answering_machine_detection: true, machine_action: 'hangup' } }));
      expect(fake.dialRequests().at(-1)!.fields).toMatchObject({ MachineDetection: 'Enable' });
      expect(fake.dialRequests().at(-1)!.fields.AsyncAmd).toBeUndefined();
    });

    it('waits for the end of the greeting when the agent is to leave a message on a machine', async () => {
      await provider.placeCall(dial({ settings: { answering_machine_detection: true, machine_action: 'talk' } }));
      expect(fake.dialRequests().at(-1)!.fields.MachineDetection).toBe('DetectMessageEnd');
    });

    it('records the call and points the recording callback at our recording URL when recording is on', async () => {
      const { providerCallId } = await provider.placeCall(dial({ settings: { record: true } }));
      expect(fake.dialRequests().at(-1)!.fields).toMatchObject({
        Record: 'true',
        RecordingStatusCallback: callbackUrlsFor(receiver.base, 'twilio', 7).recordingUrl,
        RecordingStatusCallbackMethod: 'POST',
        RecordingStatusCallbackEvent: 'completed',
      });
      expect(fake.call(providerCallId).record).toBe(true);
    });

    it('authenticates with the API key when the credentials carry one', async () => {
      const apiKey = { sid: `SK${'1'.repeat(32)}`, secret: 'a-key-secret' };
      const keyed = new TwilioFake({ apiKey });
      const keyedProvider = providerFor(await keyed.start());
      try {
        await keyedProvider.placeCall(dial({ credentials: keyed.credentials }));
        expect(keyed.dialRequests()[0].headers.authorization).toBe(`Basic ${Buffer.from(`${apiKey.sid}:${apiKey.secret}`).toString('base64')}`);
      } finally {
        await keyed.stop();
      }
    });

    it('treats 429 (error 20429) as throttling: not processed, retry after what Twilio asked', async () => {
      fake.throttleNext();
      const error = await dialError(provider.placeCall(dial()));
      expect(error).toMatchObject({ throttled: true, notProcessed: true, permanent: false, reason: 'carrier_throttled', retryAfterMs: 1000, carrierCode: '20429' });
    });

    it('refuses an invalid To number permanently (error 21211)', async () => {
      const before = fake.calls.size;
      const error = await dialError(provider.placeCall(dial({ to: '0415555' })));
      expect(error).toMatchObject({ permanent: true, notProcessed: true, reason: 'invalid_number', carrierCode: '21211' });
      expect(fake.calls.size).toBe(before);
    });

    it.each([
      [21214, 'unreachable'],
      [21215, 'geo_permission_denied'],
      [21217, 'invalid_number'],
      [13224, 'invalid_number'],
      [21216, 'number_blocked'],
      [21219, 'unverified_number'],
      [21212, 'invalid_from_number'],
      [21999, 'carrier_rejected'],
    ])('maps Twilio error %i to the end reason %s, permanently', async (code, reason) => {
      fake.failNext({ status: 400, code });
      const error = await dialError(provider.placeCall(dial()));
      expect(error).toMatchObject({ permanent: true, notProcessed: true, reason, carrierCode: String(code) });
    });

    it('refuses wrong credentials as unauthorized (error 20003)', async () => {
      const wrong = { ...fake.credentials, auth_token: '0'.repeat(32) };
      const error = await dialError(provider.placeCall(dial({ credentials: wrong })));
      expect(error).toMatchObject({ permanent: true, reason: 'unauthorized', carrierCode: '20003' });
    });

    it('reports a suspended account (error 20005)', async () => {
      fake.accountStatus = 'suspended';
      const error = await dialError(provider.placeCall(dial()));
      expect(error).toMatchObject({ permanent: true, reason: 'account_suspended', carrierCode: '20005' });
    });

    it.each([
      ['unavailable', '20503'],
      ['server_error', '20500'],
    ] as const)('does not claim a %s answer went unprocessed: Twilio may have placed the call', async (kind, code) => {
      fake.failNext(kind);
      const error = await dialError(provider.placeCall(dial()));
      expect(error).toMatchObject({ permanent: false, notProcessed: false, throttled: false, carrierCode: code });
    });

    it('leaves the outcome unknown when the connection drops after Twilio placed the call', async () => {
      const before = fake.calls.size;
      fake.failNext('reset');
      const error = await provider.placeCall(dial()).then(() => null, (caught: unknown) => caught);
      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(CarrierError);
      expect(fake.calls.size).toBe(before + 1);
    });

    it('leaves the outcome unknown when Twilio does not answer in time', async () => {
      provider.requestTimeoutMs = 300;
      fake.failNext('timeout');
      const error = await provider.placeCall(dial()).then(() => null, (caught: unknown) => caught);
      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(CarrierError);
      expect((error as Error).message).toMatch(/no answer within 300 ms/);
    });

    it('knows no call was placed when no connection could be made', async () => {
      const closed = new TwilioFake();
      const unreachable = providerFor(await closed.start());
      await closed.stop();
      const error = await dialError(unreachable.placeCall(dial()));
      expect(error).toMatchObject({ notProcessed: true, permanent: false, reason: 'carrier_unreachable' });
    });

    it('refuses malformed credentials without asking Twilio', async () => {
      const before = fake.requests.length;
      const error = await dialError(provider.placeCall(dial({ credentials: { account_sid: 'nope' } })));
      expect(error).toMatchObject({ permanent: true, reason: 'invalid_credentials' });
      expect(fake.requests.length).toBe(before);
    });
  });

  describe('looking a call up', () => {
    it('cannot tell without the call SID or the dial that placed the call (Twilio has no way to find a call by our run)', async () => {
      const before = fake.requests.length;
      await expect(provider.lookupCall(reference(null))).resolves.toEqual({ kind: 'unknown' });
      expect(fake.requests.length).toBe(before);
    });

    it('answers not_found for a SID Twilio does not know', async () => {
      await expect(provider.lookupCall(reference(`CA${'9'.repeat(32)}`))).resolves.toEqual({ kind: 'not_found' });
    });

    it('reports a queued call as found with nothing happened yet', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      await expect(provider.lookupCall(reference(providerCallId))).resolves.toEqual({ kind: 'found', providerCallId, events: [] });
      const request = fake.requests.at(-1)!;
      expect(request).toMatchObject({ method: 'GET', path: `/2010-04-01/Accounts/${fake.accountSid}/Calls/${providerCallId}.json` });
      expect(request.headers.authorization).toMatch(/^Basic /);
    });

    it('reports a completed call with its duration, who answered and the absolute price', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      const start = new Date('2030-01-01T10:00:00Z');
      fake.setCallStatus(providerCallId, {
        status: 'completed',
        startTime: start,
        endTime: new Date('2030-01-01T10:01:07Z'),
        duration: 37,
        price: '-0.02130',
        priceUnit: 'USD',
        answeredBy: 'machine_end_beep',
      });
      const lookup = await provider.lookupCall(reference(providerCallId));
      expect(lookup).toEqual({
        kind: 'found',
        providerCallId,
        events: [
          { runId: 7, organizationId: 3, provider: 'twilio', providerCallId, type: 'ringing', occurredAt: '2030-01-01T10:00:00.000Z' },
          { runId: 7, organizationId: 3, provider: 'twilio', providerCallId, type: 'answered', occurredAt: '2030-01-01T10:00:30.000Z', answerTimeEstimated: true, answeredBy: 'machine' },
          {
            runId: 7,
            organizationId: 3,
            provider: 'twilio',
            providerCallId,
            type: 'completed',
            occurredAt: '2030-01-01T10:01:07.000Z',
            durationSeconds: 37,
            cost: { amount: 0.0213, currency: 'USD' },
          },
        ],
      });
    });

    it.each([
      ['ringing', ['ringing']],
      ['in-progress', ['ringing', 'answered']],
      ['busy', ['busy']],
      ['no-answer', ['ringing', 'no_answer']],
      ['canceled', ['canceled']],
      ['failed', ['failed']],
    ] as const)('maps a %s call to the events %j', async (status, types) => {
      const { providerCallId } = await provider.placeCall(dial());
      fake.setCallStatus(providerCallId, { status, startTime: new Date(), endTime: new Date() });
      const lookup = await provider.lookupCall(reference(providerCallId));
      expect(lookup.kind === 'found' && lookup.events.map((event) => event.type)).toEqual(types);
    });
  });

  describe('finding a call whose SID was lost, by the dial\'s numbers and time', () => {
    const FROM = '+14155550100';
    // Every test calls its own number, so calls placed by the others never match.
    let callee = 14155550300;
    const nextCallee = () => `+${callee++}`;
    const lostDial = (to: string, attemptedAt: Date) => ({ ...reference(null), dial: { to, from: FROM, attemptedAt } });
    /** Dials as the dialer does, but the answer never arrives: Twilio has the call, we do not know its SID. */
    const dialLosingTheAnswer = async (to: string) => {
      const attemptedAt = new Date();
      fake.failNext('reset');
      await expect(provider.placeCall(dial({ to, from: FROM }))).rejects.not.toBeInstanceOf(CarrierError);
      return { attemptedAt, sid: fake.lastCall().sid };
    };

    it('finds the queued call the lost dial created, asking with Basic auth for queued and started calls to and from its numbers', async () => {
      const to = nextCallee();
      const { attemptedAt, sid } = await dialLosingTheAnswer(to);
      const before = fake.requests.length;
      await expect(provider.lookupCall(lostDial(to, attemptedAt))).resolves.toEqual({ kind: 'found', providerCallId: sid, events: [] });
      const lists = fake.requests.slice(before);
      expect(lists.map((request) => [request.method, request.path])).toEqual([
        ['GET', `/2010-04-01/Accounts/${fake.accountSid}/Calls.json`],
        ['GET', `/2010-04-01/Accounts/${fake.accountSid}/Calls.json`],
      ]);
      expect(lists.map((request) => Object.fromEntries(request.query))).toEqual([
        { To: to, From: FROM, Status: 'queued', PageSize: '50' },
        { To: to, From: FROM, 'StartTime>': attemptedAt.toISOString().slice(0, 10), PageSize: '50' },
      ]);
      for (const request of lists) expect(request.headers.authorization).toBe(`Basic ${Buffer.from(`${fake.accountSid}:${fake.authToken}`).toString('base64')}`);
    });

    it('reports what a found call already went through, like a look-up by SID', async () => {
      const to = nextCallee();
      const { attemptedAt, sid } = await dialLosingTheAnswer(to);
      fake.setCallStatus(sid, { status: 'no-answer', startTime: new Date(), endTime: new Date(), duration: 0 });
      const lookup = await provider.lookupCall(lostDial(to, attemptedAt));
      expect(lookup.kind === 'found' && lookup.providerCallId).toBe(sid);
      expect(lookup.kind === 'found' && lookup.events.map((event) => [event.type, event.runId, event.providerCallId])).toEqual([
        ['ringing', 7, sid],
        ['no_answer', 7, sid],
      ]);
    });

    it('follows next_page_uri until it has seen every call to and from the numbers', async () => {
      const to = nextCallee();
      const { attemptedAt, sid } = await dialLosingTheAnswer(to);
      fake.setCallStatus(sid, { status: 'completed', startTime: new Date(), endTime: new Date(), duration: 5 });
      // Sixty more calls between the same numbers today, created after the dial's window: the list shows them first.
      const later = new Date(attemptedAt.getTime() + 10 * 60_000);
      for (let i = 0; i < 60; i++) {
        const { providerCallId } = await provider.placeCall(dial({ to, from: FROM }));
        fake.setCallStatus(providerCallId, { status: 'completed', dateCreated: later, startTime: new Date(), endTime: new Date(), duration: 5 });
      }
      const before = fake.requests.length;
      const lookup = await provider.lookupCall(lostDial(to, attemptedAt));
      expect(lookup.kind === 'found' && lookup.providerCallId).toBe(sid);
      expect(fake.requests.slice(before).some((request) => request.query.get('Page') === '1' && request.query.has('PageToken'))).toBe(true);
    });

    it('answers unknown, never a guess, when two calls match the dial', async () => {
      const to = nextCallee();
      const { attemptedAt } = await dialLosingTheAnswer(to);
      await provider.placeCall(dial({ to, from: FROM }));
      await expect(provider.lookupCall(lostDial(to, attemptedAt))).resolves.toEqual({ kind: 'unknown' });
    });

    it('answers unknown when no call was created within the dial\'s time, or between its numbers', async () => {
      const to = nextCallee();
      const { attemptedAt } = await dialLosingTheAnswer(to);
      const later = new Date(attemptedAt.getTime() + 10 * 60_000);
      await expect(provider.lookupCall(lostDial(to, later))).resolves.toEqual({ kind: 'unknown' });
      await expect(provider.lookupCall(lostDial(nextCallee(), attemptedAt))).resolves.toEqual({ kind: 'unknown' });
      await expect(provider.lookupCall({ ...lostDial(to, attemptedAt), dial: { to, from: '+14155550199', attemptedAt } })).resolves.toEqual({
        kind: 'unknown',
      });
    });

    it('passes Twilio\'s refusal on, so the dialer knows it could not ask', async () => {
      fake.failNext('server_error');
      await expect(provider.lookupCall(lostDial(nextCallee(), new Date()))).rejects.toBeInstanceOf(TwilioApiError);
    });
  });

  describe('hanging up', () => {
    it('cancels a ringing call, and Twilio reports it canceled', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      await fake.ring(providerCallId);
      await expect(provider.hangup(reference(providerCallId))).resolves.toBe(true);
      const request = fake.requests.find((entry) => entry.method === 'POST' && entry.path.endsWith(`/Calls/${providerCallId}.json`))!;
      expect(request.form).toEqual([['Status', 'canceled']]);
      expect(fake.call(providerCallId).status).toBe('canceled');
      await waitFor(() => receiver.received.some(({ request: callback }) => callback.rawBody.toString().includes('CallStatus=canceled')));
    });

    it('does not end an answered call: it belongs to the agent', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      fake.setCallStatus(providerCallId, { status: 'in-progress' });
      await expect(provider.hangup(reference(providerCallId))).resolves.toBe(false);
      expect(fake.call(providerCallId).status).toBe('in-progress');
    });

    it('answers false for a call that already ended (error 21220) or that Twilio does not know', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      fake.setCallStatus(providerCallId, { status: 'completed' });
      await expect(provider.hangup(reference(providerCallId))).resolves.toBe(false);
      await expect(provider.hangup(reference(`CA${'8'.repeat(32)}`))).resolves.toBe(false);
      await expect(provider.hangup(reference(null))).resolves.toBe(false);
    });
  });

  describe('ending a call whatever its state', () => {
    it('hangs up an answered call with Status=completed, and Twilio reports it completed', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      fake.setCallStatus(providerCallId, { status: 'in-progress', duration: 95 });
      await expect(provider.endCall(reference(providerCallId))).resolves.toBe(true);
      const request = fake.requests.filter((entry) => entry.method === 'POST' && entry.path.endsWith(`/Calls/${providerCallId}.json`)).at(-1)!;
      expect(request.form).toEqual([['Status', 'completed']]);
      expect(fake.call(providerCallId).status).toBe('completed');
      await waitFor(() => receiver.received.some(({ request: callback }) => callback.rawBody.toString().includes('CallStatus=completed')));
    });

    it('cancels a call that is still ringing', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      await fake.ring(providerCallId);
      await expect(provider.endCall(reference(providerCallId))).resolves.toBe(true);
      expect(fake.call(providerCallId).status).toBe('canceled');
    });

    it('answers false for a call that already ended or that Twilio does not know', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      fake.setCallStatus(providerCallId, { status: 'completed' });
      await expect(provider.endCall(reference(providerCallId))).resolves.toBe(false);
      await expect(provider.endCall(reference(`CA${'8'.repeat(32)}`))).resolves.toBe(false);
      await expect(provider.endCall(reference(null))).resolves.toBe(false);
    });

    it("passes Twilio's failure on, so the reaper logs that it could not", async () => {
      const { providerCallId } = await provider.placeCall(dial());
      fake.setCallStatus(providerCallId, { status: 'in-progress' });
      fake.failNext('server_error');
      await expect(provider.endCall(reference(providerCallId))).rejects.toBeInstanceOf(TwilioApiError);
      expect(fake.call(providerCallId).status).toBe('in-progress');
    });
  });

  describe('verifying webhooks', () => {
    const url = 'https://voice.example.test/api/v1/telephony/twilio/status/7';
    const credentials = fake.credentials;
    const fields = () => ({ AccountSid: fake.accountSid, CallSid: `CA${'2'.repeat(32)}`, CallStatus: 'ringing', Timestamp: new Date().toUTCString() });

    it('accepts a request Twilio signed', () => {
      expect(() => provider.verifyWebhook(fake.signedRequest(url, fields()), credentials, Date.now())).not.toThrow();
    });

    it('rejects an unsigned request with 401', () => {
      expect(rejection(() => provider.verifyWebhook(fake.signedRequest(url, fields(), { signature: null }), credentials, Date.now()))).toBe(401);
    });

    it('rejects a request signed with another token with 403', () => {
      const forged = fake.signedRequest(url, fields(), { authToken: 'b'.repeat(32) });
      expect(rejection(() => provider.verifyWebhook(forged, credentials, Date.now()))).toBe(403);
    });

    it('rejects a signed request whose body or URL was changed with 403', () => {
      const signed = fake.signedRequest(url, fields());
      const tampered = { ...signed, rawBody: Buffer.from(signed.rawBody.toString().replace('CallStatus=ringing', 'CallStatus=completed')) };
      expect(rejection(() => provider.verifyWebhook(tampered, credentials, Date.now()))).toBe(403);
      const otherRun = { ...signed, url: url.replace('/status/7', '/status/8') };
      expect(rejection(() => provider.verifyWebhook(otherRun, credentials, Date.now()))).toBe(403);
    });

    it('rejects a replayed status callback whose signed Timestamp is over an hour old', () => {
      const old = fake.signedRequest(url, { ...fields(), Timestamp: new Date(Date.now() - 2 * 3600_000).toUTCString() });
      expect(rejection(() => provider.verifyWebhook(old, credentials, Date.now()))).toBe(403);
    });

    it('rejects a request signed for another account', () => {
      const other = fake.signedRequest(url, { ...fields(), AccountSid: `AC${'f'.repeat(32)}` });
      expect(rejection(() => provider.verifyWebhook(other, credentials, Date.now()))).toBe(403);
    });

    it('rejects everything when the configuration has no usable credentials', () => {
      expect(rejection(() => provider.verifyWebhook(fake.signedRequest(url, fields()), null, Date.now()))).toBe(403);
    });

    it('gives an exact replay the same replay key, and another event another one', () => {
      const signed = fake.signedRequest(url, fields());
      expect(provider.replayKey(signed)).toBe(provider.replayKey({ ...signed }));
      expect(provider.replayKey(fake.signedRequest(url, { ...fields(), CallStatus: 'in-progress' }))).not.toBe(provider.replayKey(signed));
    });

    it('verifies the callbacks the fake sends over HTTP, as our API receives them', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      const before = receiver.received.length;
      await fake.ring(providerCallId);
      const [callback] = receiver.received.slice(before);
      expect(callback.verdict).toBe(200);
      expect(provider.parseWebhook('status', callback.request)).toMatchObject({ providerCallId, events: [{ type: 'ringing' }] });
    });
  });

  describe('reading webhooks', () => {
    const url = 'https://voice.example.test/api/v1/telephony/twilio/status/7';
    const sid = `CA${'3'.repeat(32)}`;
    const read = (kind: 'answer' | 'status' | 'recording', fields: Record<string, string>) =>
      provider.parseWebhook(kind, fake.signedRequest(url, { AccountSid: fake.accountSid, CallSid: sid, ...fields }));

    it('reads ringing with the time Twilio stamped on it', () => {
      expect(read('status', { CallStatus: 'ringing', Timestamp: 'Tue, 01 Jan 2030 10:00:05 +0000' })).toEqual({
        providerCallId: sid,
        events: [{ type: 'ringing', occurredAt: '2030-01-01T10:00:05.000Z' }],
      });
    });

    it.each([
      ['human', 'human'],
      ['machine_start', 'machine'],
      ['machine_end_beep', 'machine'],
      ['machine_end_silence', 'machine'],
      ['machine_end_other', 'machine'],
      ['fax', 'machine'],
      ['unknown', 'unknown'],
    ])('reads an answer with AnsweredBy=%s as answered by %s', (answeredBy, expected) => {
      expect(read('answer', { CallStatus: 'in-progress', AnsweredBy: answeredBy }).events).toEqual([
        { type: 'answered', occurredAt: expect.any(String), answeredBy: expected },
      ]);
    });

    it('reads completed with the duration and, when present, the absolute price', () => {
      expect(read('status', { CallStatus: 'completed', CallDuration: '61', Price: '-0.0420', PriceUnit: 'usd', Timestamp: 'Tue, 01 Jan 2030 10:01:06 +0000' }).events).toEqual([
        { type: 'completed', occurredAt: '2030-01-01T10:01:06.000Z', durationSeconds: 61, cost: { amount: 0.042, currency: 'USD' } },
      ]);
      expect(read('status', { CallStatus: 'completed', CallDuration: '61' }).events[0]).not.toHaveProperty('cost');
    });

    it.each([
      ['busy', { type: 'busy' }],
      ['no-answer', { type: 'no_answer' }],
      ['canceled', { type: 'canceled' }],
      ['failed', { type: 'failed', reason: 'carrier_failed' }],
    ])('reads %s', (status, event) => {
      expect(read('status', { CallStatus: status }).events).toEqual([{ occurredAt: expect.any(String), ...event }]);
    });

    it('reads a failed call\'s SIP response into a clear reason', () => {
      expect(read('status', { CallStatus: 'failed', SipResponseCode: '404' }).events[0].reason).toBe('invalid_number');
      expect(read('status', { CallStatus: 'failed', SipResponseCode: '603' }).events[0].reason).toBe('rejected');
      expect(read('status', { CallStatus: 'failed', SipResponseCode: '480' }).events[0].reason).toBe('unreachable');
    });

    it('ignores initiated and queued: they say nothing new', () => {
      expect(read('status', { CallStatus: 'initiated' }).events).toEqual([]);
    });

    it('reads a finished recording as the WAV at RecordingUrl', () => {
      const recordingUrl = 'https://api.twilio.com/2010-04-01/Accounts/AC1/Recordings/RE1';
      expect(read('recording', { RecordingStatus: 'completed', RecordingUrl: recordingUrl, RecordingSid: 'RE1' }).events).toEqual([
        { type: 'recording', occurredAt: expect.any(String), recordingUrl: `${recordingUrl}.wav` },
      ]);
      expect(read('recording', { RecordingStatus: 'absent', RecordingUrl: recordingUrl }).events).toEqual([]);
    });
  });

  describe('answering', () => {
    const context = { runId: 7, sessionToken: 'tok-7', settings: {} };

    it('streams the call to the agent runtime, passing the stream URL\'s query as custom parameters', () => {
      const answer = provider.answerInstructions({ ...context, streamUrl: 'wss://agent.example.test/media?session_token=tok-7' });
      expect(answer.contentType).toBe('text/xml; charset=utf-8');
      expect(answer.body).toBe(
        '<?xml version="1.0" encoding="UTF-8"?><Response><Connect><Stream url="wss://agent.example.test/media">' +
          '<Parameter name="session_token" value="tok-7"/><Parameter name="run_id" value="7"/></Stream></Connect></Response>',
      );
    });

    it('escapes everything it writes into the XML', () => {
      const answer = provider.answerInstructions({
        ...context,
        sessionToken: 'a"b<c>&\'d',
        streamUrl: 'wss://agent.example.test/m&e<dia>?x=1&y="2"',
      });
      expect(answer.body).toContain('url="wss://agent.example.test/m&amp;e%3Cdia%3E"');
      expect(answer.body).toContain('<Parameter name="x" value="1"/><Parameter name="y" value="&quot;2&quot;"/>');
      expect(answer.body).toContain('<Parameter name="session_token" value="a&quot;b&lt;c&gt;&amp;&apos;d"/>');
    });

    it('hangs up on a machine when the configuration says so, and lets the agent talk otherwise', () => {
      const streamUrl = 'wss://agent.example.test/media';
      const hangup = { answering_machine_detection: true, machine_action: 'hangup' };
      const talk = { answering_machine_detection: true, machine_action: 'talk' };
      expect(provider.answerInstructions({ ...context, streamUrl, settings: hangup, answeredBy: 'machine' }).body).toBe(
        '<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>',
      );
      expect(provider.answerInstructions({ ...context, streamUrl, settings: hangup, answeredBy: 'human' }).body).toContain('<Connect><Stream');
      expect(provider.answerInstructions({ ...context, streamUrl, settings: talk, answeredBy: 'machine' }).body).toContain('<Connect><Stream');
    });

    it('takes a whole call through the fake: dial, ring, answer by a machine, hang up', async () => {
      const { providerCallId } = await provider.placeCall(dial({ settings: { answering_machine_detection: true, machine_action: 'hangup' } }));
      await fake.ring(providerCallId);
      const answer = await fake.answer(providerCallId, { answeredBy: 'machine_start' });
      expect(answer.status).toBe(200);
      expect(answer.body).toContain('<Hangup/>');
      const human = await provider.placeCall(dial({ settings: { answering_machine_detection: true } }));
      expect((await fake.answer(human.providerCallId, { answeredBy: 'human' })).body).toContain('<Stream url="wss://agent.example.test/media">');
    });
  });

  describe('recordings', () => {
    it('downloads the recording Twilio announced, with the account\'s credentials', async () => {
      const { providerCallId } = await provider.placeCall(dial({ settings: { record: true } }));
      await fake.complete(providerCallId, { durationSeconds: 2 });
      const before = receiver.received.length;
      await fake.recordingReady(providerCallId);
      const callback = receiver.received.slice(before).find(({ request }) => request.url.includes('/recording/'))!;
      expect(callback.verdict).toBe(200);
      const [event] = provider.parseWebhook('recording', callback.request).events;
      const recording = await provider.fetchRecording(event.recordingUrl!, fake.credentials);
      expect(recording.contentType).toBe('audio/x-wav');
      expect(recording.body.subarray(0, 4).toString()).toBe('RIFF');
      expect(recording.body.length).toBe(44 + 2 * 8000 * 2);
      expect(fake.requests.at(-1)!.headers.authorization).toMatch(/^Basic /);
    });

    it('never fetches a recording from, nor sends the credentials to, a host that is not Twilio', async () => {
      expect(await downloadElsewhere((url) => provider.fetchRecording(url, fake.credentials))).toEqual({ authorizations: [], refused: true });
    });

    it('follows Twilio to its storage, but never a redirect to an internal address', async () => {
      const download = (url: string) => provider.fetchRecording(url, fake.credentials);
      expect(await downloadElsewhere(download, (elsewhere) => fake.redirectTo(elsewhere))).toEqual({ authorizations: [], refused: true });
      await expect(download(fake.redirectTo('https://169.254.169.254/latest/meta-data/'))).rejects.toThrow(/refused to follow a redirect to https:\/\/169\.254\.169\.254/);
      await expect(download(fake.redirectTo('https://[::1]/x.wav'))).rejects.toThrow(/refused to follow a redirect/);
    });
  });

  describe('artifacts', () => {
    it('leaves the transcript to the agent runtime and the recording to fetchRecording', async () => {
      await expect(provider.collectArtifacts()).resolves.toEqual({ transcript: [], recording: null });
    });
  });

  describe('checking credentials with Twilio', () => {
    it('accepts an active account, and names a suspended one or refused credentials', async () => {
      await expect(provider.checkCredentials(fake.credentials)).resolves.toEqual({ ok: true });
      fake.accountStatus = 'suspended';
      await expect(provider.checkCredentials(fake.credentials)).resolves.toMatchObject({ ok: false, reason: 'account_suspended' });
      await expect(provider.checkCredentials({ ...fake.credentials, auth_token: '0'.repeat(32) })).resolves.toMatchObject({
        ok: false,
        reason: 'unauthorized',
      });
    });
  });

  describe('validating the configuration', () => {
    it('accepts an Account SID with its Auth Token, optionally an API key', () => {
      expect(provider.validateCredentials(fake.credentials)).toEqual([]);
      expect(provider.validateCredentials({ ...fake.credentials, api_key_sid: `SK${'a'.repeat(32)}`, api_key_secret: 'secret' })).toEqual([]);
    });

    it('says what is missing or mis-shaped', () => {
      expect(provider.validateCredentials(null)).toEqual(['credentials are required: account_sid and auth_token']);
      expect(provider.validateCredentials({ account_sid: 'AC123', auth_token: 'x' })).toEqual([
        'credentials.account_sid must be a Twilio Account SID: "AC" followed by 32 hexadecimal characters',
        'credentials.auth_token must be the account\'s Auth Token: 32 hexadecimal characters',
      ]);
      expect(provider.validateCredentials({ ...fake.credentials, api_key_sid: `SK${'a'.repeat(32)}` })).toEqual([
        'credentials.api_key_secret must be the API key\'s secret (set both api_key_sid and api_key_secret, or neither)',
      ]);
      expect(provider.validateCredentials({ ...fake.credentials, authtoken: 'typo' })).toEqual([
        'credentials.authtoken is not a Twilio credential (known: account_sid, auth_token, api_key_sid, api_key_secret)',
      ]);
    });

    it.each([
      ['NUL', 'secret\u0000'],
      ['a space', 'api key secret'],
      ['a letter beyond ASCII', 'secrÉt'],
    ])('rejects an API key secret with %s: it goes into the Authorization header', (_, secret) => {
      expect(provider.validateCredentials({ ...fake.credentials, api_key_sid: `SK${'a'.repeat(32)}`, api_key_secret: secret })).toEqual([
        'credentials.api_key_secret must be visible ASCII characters only (no spaces or control characters): it is sent in an HTTP header',
      ]);
    });

    it('rejects keys named like Object.prototype members as unknown credentials', () => {
      expect(provider.validateCredentials({ ...fake.credentials, toString: 'x', constructor: 'y' })).toEqual([
        'credentials.toString is not a Twilio credential (known: account_sid, auth_token, api_key_sid, api_key_secret)',
        'credentials.constructor is not a Twilio credential (known: account_sid, auth_token, api_key_sid, api_key_secret)',
      ]);
    });

    it('accepts the documented settings', () => {
      expect(provider.validateSettings({})).toEqual([]);
      expect(
        provider.validateSettings({ answering_machine_detection: true, machine_action: 'talk', record: true, agent_runtime_url: 'wss://agent.example.test/media' }),
      ).toEqual([]);
    });

    it('refuses an agent runtime at a ws:// URL, which Twilio does not stream to (its error 31922)', () => {
      expect(provider.validateSettings({ agent_runtime_url: 'ws://agent.example.test/media' })).toEqual([
        'settings.agent_runtime_url must be a wss:// URL: Twilio streams calls to wss:// only',
      ]);
    });

    it('rejects unknown keys and wrong values with a message', () => {
      expect(
        provider.validateSettings({
          answering_machine_detection: 'yes',
          record: 1,
          machine_action: 'voicemail',
          agent_runtime_url: 'https://agent.example.test',
          ring_ms: 5,
        }),
      ).toEqual([
        'settings.answering_machine_detection must be true or false',
        'settings.record must be true or false',
        'settings.machine_action must be "hangup" (end the call on a machine) or "talk" (let the agent leave a message)',
        'settings.agent_runtime_url must be a ws:// or wss:// URL',
        'settings.ring_ms is not a Twilio setting (known: answering_machine_detection, machine_action, record, agent_runtime_url)',
      ]);
      expect(provider.validateSettings({ machine_action: 'hangup' })).toEqual([
        'settings.machine_action needs settings.answering_machine_detection set to true',
      ]);
    });
  });
});
