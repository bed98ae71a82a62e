import { AppConfig } from '@app/config';
import { PlivoFake } from '../../../../test/fakes/plivo-fake';
import { dialError, downloadElsewhere, specDial, specReference } from '../../../../test/fakes/provider-spec-calls';
import { rejection, waitFor, WebhookReceiver } from '../../../../test/fakes/webhook-receiver';
import { callbackUrlsFor } from '../callback-urls';
import { CarrierError } from '../carrier-error';
import { PlaceCallRequest } from '../telephony-provider';
import { PlivoApiError } from './plivo-api';
import { PlivoProvider } from './plivo.provider';

function providerFor(baseUrl: string, publicBaseUrl = 'https://voice.example.test'): PlivoProvider {
  return new PlivoProvider({ publicBaseUrl, carrierApiUrls: { plivo: baseUrl, twilio: '', telnyx: '', vonage: '' } } as unknown as AppConfig);
}

describe('PlivoProvider', () => {
  const fake = new PlivoFake();
  const receiver = new WebhookReceiver(() => fake.credentials);
  let provider: PlivoProvider;

  const dial = (overrides: Partial<PlaceCallRequest> = {}) => specDial(receiver, 'plivo', fake.credentials, overrides);
  const reference = (providerCallId: string | null) => specReference(fake.credentials, providerCallId);

  beforeAll(async () => {
    const base = await fake.start();
    await receiver.start();
    provider = providerFor(base, receiver.base);
    receiver.provider = provider;
  });
  afterAll(async () => {
    await fake.stop();
    await receiver.stop();
  });
  afterEach(() => {
    fake.queueCalls = false;
    receiver.answerSettings = {};
    provider.requestTimeoutMs = 15_000;
  });

  describe('placing a call', () => {
    it('sends a JSON dial request with HTTP Basic auth and every parameter Plivo needs', async () => {
      const { providerCallId } = await provider.placeCall(dial());

      const request = fake.dialRequests().at(-1)!;
      expect(request.path).toBe(`/v1/Account/${fake.authId}/Call/`);
      expect(request.headers.authorization).toBe(`Basic ${Buffer.from(`${fake.authId}:${fake.authToken}`).toString('base64')}`);
      expect(request.headers['content-type']).toBe('application/json');
      const urls = callbackUrlsFor(receiver.base, 'plivo', 7);
      expect(request.json).toEqual({
        from: '14155550100',
        to: '14155550123',
        answer_url: urls.answerUrl,
        answer_method: 'POST',
        ring_url: urls.statusUrl,
        ring_method: 'POST',
        hangup_url: urls.statusUrl,
        hangup_method: 'POST',
        time_limit: 600,
      });
      expect(fake.call(providerCallId)).toMatchObject({ requestUuid: providerCallId, status: 'fired', to: '14155550123', timeLimit: 600 });
    });

    it('asks for machine detection that hangs up on machines, reported to our status URL', async () => {
      await provider.placeCall(dial({ settings: { answering_machine_detection: true, machine_action: 'hangup' } }));
      expect(fake.dialRequests().at(-1)!.json).toMatchObject({
        machine_detection: 'hangup',
        machine_detection_url: callbackUrlsFor(receiver.base, 'plivo', 7).statusUrl,
        machine_detection_method: 'POST',
      });
    });

    it('only detects machines, and lets the call go on, when the agent is to talk to them', async () => {
      await provider.placeCall(dial({ settings: { answering_machine_detection: true, machine_action: 'talk' } }));
      expect(fake.dialRequests().at(-1)!.json).toMatchObject({ machine_detection: 'true' });
    });

    it('takes a queued call ("call queued") like a fired one', async () => {
      fake.queueCalls = true;
      const { providerCallId } = await provider.placeCall(dial());
      expect(fake.call(providerCallId).status).toBe('queued');
    });

    it('treats 429 as throttling: not processed, retry after what Plivo asked', async () => {
      fake.throttleNext();
      const error = await dialError(provider.placeCall(dial()));
      expect(error).toMatchObject({ throttled: true, notProcessed: true, permanent: false, reason: 'carrier_throttled', retryAfterMs: 2000, carrierCode: 'HTTP-429' });
    });

    it('refuses an invalid destination permanently as invalid_number', async () => {
      const before = fake.calls.size;
      const error = await dialError(provider.placeCall(dial({ to: '+0123' })));
      expect(error).toMatchObject({ permanent: true, notProcessed: true, reason: 'invalid_number', carrierCode: 'HTTP-400' });
      expect(error.message).toContain("invalid 'to' number");
      expect(fake.calls.size).toBe(before);
    });

    it('refuses an invalid caller id as invalid_from_number', async () => {
      const error = await dialError(provider.placeCall(dial({ from: 'ACME' })));
      expect(error).toMatchObject({ permanent: true, reason: 'invalid_from_number' });
    });

    it('refuses wrong credentials as unauthorized (401)', async () => {
      const error = await dialError(provider.placeCall(dial({ credentials: { ...fake.credentials, auth_token: 'x'.repeat(40) } })));
      expect(error).toMatchObject({ permanent: true, notProcessed: true, reason: 'unauthorized', carrierCode: 'HTTP-401' });
    });

    it.each([
      [402, 'Insufficient credit to make this call', 'insufficient_funds'],
      [403, 'This account is suspended', 'account_suspended'],
      [400, 'Calls to this destination country are not allowed for your account: number', 'geo_permission_denied'],
      [400, 'something else entirely', 'carrier_rejected'],
    ])('maps a %i "%s" to %s', async (status, text, reason) => {
      fake.failNext({ status, error: text });
      const error = await dialError(provider.placeCall(dial()));
      expect(error).toMatchObject({ permanent: true, reason });
    });

    it.each(['server_error', 'unavailable'] as const)('does not claim a %s answer went unprocessed', async (kind) => {
      fake.failNext(kind);
      const error = await dialError(provider.placeCall(dial()));
      expect(error).toMatchObject({ permanent: false, notProcessed: false, throttled: false });
    });

    it('leaves the outcome unknown when the connection drops after Plivo placed the call', async () => {
      const before = fake.calls.size;
      fake.failNext('reset');
      const error = await provider.placeCall(dial()).then(() => null, (caught: unknown) => caught);
      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(CarrierError);
      expect(fake.calls.size).toBe(before + 1);
    });

    it('leaves the outcome unknown when Plivo does not answer in time', async () => {
      provider.requestTimeoutMs = 300;
      fake.failNext('timeout');
      const error = await provider.placeCall(dial()).then(() => null, (caught: unknown) => caught);
      expect(error).not.toBeInstanceOf(CarrierError);
      expect((error as Error).message).toMatch(/no answer within 300 ms/);
    });

    it('knows no call was placed when no connection could be made', async () => {
      const closed = new PlivoFake();
      const unreachable = providerFor(await closed.start());
      await closed.stop();
      const error = await dialError(unreachable.placeCall(dial()));
      expect(error).toMatchObject({ notProcessed: true, permanent: false, reason: 'carrier_unreachable' });
    });

    it('refuses malformed credentials without asking Plivo', async () => {
      const before = fake.requests.length;
      const error = await dialError(provider.placeCall(dial({ credentials: { auth_id: 'nope', auth_token: '' } })));
      expect(error).toMatchObject({ permanent: true, reason: 'invalid_credentials' });
      expect(fake.requests.length).toBe(before);
    });
  });

  describe('looking a call up', () => {
    it('cannot tell without the request UUID or the dial that placed the call', async () => {
      await expect(provider.lookupCall(reference(null))).resolves.toEqual({ kind: 'unknown' });
    });

    it('finds a queued call, with nothing happened yet', async () => {
      fake.queueCalls = true;
      const { providerCallId } = await provider.placeCall(dial());
      await expect(provider.lookupCall(reference(providerCallId))).resolves.toEqual({ kind: 'found', providerCallId, events: [] });
      expect(fake.requests.at(-1)).toMatchObject({ method: 'GET', path: `/v1/Account/${fake.authId}/Call/${providerCallId}/` });
      expect(fake.requests.at(-1)!.query.get('status')).toBe('queued');
    });

    it('finds a live call ringing, then answered', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      await fake.ring(providerCallId);
      const ringing = await provider.lookupCall(reference(providerCallId));
      expect(ringing.kind === 'found' && ringing.events.map((event) => event.type)).toEqual(['ringing']);
      fake.setCallStatus(providerCallId, { status: 'in-progress' });
      const answered = await provider.lookupCall(reference(providerCallId));
      expect(answered.kind === 'found' && answered.events.map((event) => event.type)).toEqual(['ringing', 'answered']);
    });

    it('reads an ended call\'s detail record: duration, cost in USD, when it was answered and ended', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      fake.setCallStatus(providerCallId, {
        status: 'completed',
        dateCreated: new Date('2025-01-01T10:00:00Z'),
        answerTime: new Date('2025-01-01T10:00:08Z'),
        endTime: new Date('2025-01-01T10:01:00Z'),
        duration: 52,
        totalCost: '0.01700',
        hangupCauseName: 'Normal Hangup',
      });
      await expect(provider.lookupCall(reference(providerCallId))).resolves.toEqual({
        kind: 'found',
        providerCallId,
        events: [
          { runId: 7, organizationId: 3, provider: 'plivo', providerCallId, type: 'ringing', occurredAt: '2025-01-01T10:00:00.000Z' },
          { runId: 7, organizationId: 3, provider: 'plivo', providerCallId, type: 'answered', occurredAt: '2025-01-01T10:00:08.000Z' },
          {
            runId: 7,
            organizationId: 3,
            provider: 'plivo',
            providerCallId,
            type: 'completed',
            occurredAt: '2025-01-01T10:01:00.000Z',
            durationSeconds: 52,
            cost: { amount: 0.017, currency: 'USD' },
          },
        ],
      });
    });

    it.each([
      ['busy', 'Busy Line', { type: 'busy' }],
      ['no-answer', 'No Answer', { type: 'no_answer' }],
      ['cancel', 'Cancelled', { type: 'canceled' }],
      ['failed', 'Unallocated Number', { type: 'failed', reason: 'invalid_number' }],
      ['failed', 'Call Rejected', { type: 'failed', reason: 'rejected' }],
    ] as const)('reads an unanswered %s call ("%s")', async (status, cause, event) => {
      const { providerCallId } = await provider.placeCall(dial());
      fake.setCallStatus(providerCallId, { status, endTime: new Date(), hangupCauseName: cause });
      const lookup = await provider.lookupCall(reference(providerCallId));
      expect(lookup.kind === 'found' && lookup.events).toEqual([expect.objectContaining(event)]);
    });

    it('cannot tell while Plivo has the call nowhere yet (dialing, before its detail record exists)', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      await expect(provider.lookupCall(reference(providerCallId))).resolves.toEqual({ kind: 'unknown' });
    });
  });

  describe('finding a call whose request UUID was lost, by the dial\'s numbers and time', () => {
    const FROM = '+14155550100';
    // Every test calls its own number, so calls placed by the others never match.
    let callee = 14155550400;
    const nextCallee = () => `+${callee++}`;
    const lostDial = (to: string, attemptedAt: Date) => ({ ...reference(null), dial: { to, from: FROM, attemptedAt } });
    /** Dials as the dialer does, but the answer never arrives: Plivo has the call, we do not know its UUID. */
    const dialLosingTheAnswer = async (to: string) => {
      const attemptedAt = new Date();
      fake.failNext('reset');
      await expect(provider.placeCall(dial({ to, from: FROM }))).rejects.not.toBeInstanceOf(CarrierError);
      return { attemptedAt, uuid: fake.lastCall().requestUuid };
    };
    const calls = `/v1/Account/${PlivoFake.AUTH_ID}/Call/`;

    it('finds the call waiting in Plivo\'s queue, asking for queued, live and ended calls with Basic auth', async () => {
      fake.queueCalls = true;
      const to = nextCallee();
      const { attemptedAt, uuid } = await dialLosingTheAnswer(to);
      const before = fake.requests.length;
      await expect(provider.lookupCall(lostDial(to, attemptedAt))).resolves.toEqual({ kind: 'found', providerCallId: uuid, events: [] });
      // The queued list has no number filter: other tests' queued calls are read too, and left aside.
      const asked = fake.requests.slice(before).filter((request) => [calls, `${calls}${uuid}/`].includes(request.path));
      expect(asked.map((request) => [request.method, request.path, Object.fromEntries(request.query)])).toEqual([
        ['GET', calls, { status: 'queued', limit: '20', offset: '0' }],
        ['GET', `${calls}${uuid}/`, { status: 'queued' }],
        ['GET', calls, { status: 'live', call_direction: 'outbound', from_number: FROM.slice(1), to_number: to.slice(1), limit: '20', offset: '0' }],
        [
          'GET',
          calls,
          {
            call_direction: 'outbound',
            from_number: FROM.slice(1),
            to_number: to.slice(1),
            end_time__gte: new Date(attemptedAt.getTime() - 15_000).toISOString().slice(0, 19).replace('T', ' '),
            limit: '20',
            offset: '0',
          },
        ],
      ]);
      for (const request of asked) expect(request.headers.authorization).toBe(`Basic ${Buffer.from(`${fake.authId}:${fake.authToken}`).toString('base64')}`);
    });

    it('finds a live call, and reports it ringing', async () => {
      const to = nextCallee();
      const { attemptedAt, uuid } = await dialLosingTheAnswer(to);
      fake.setCallStatus(uuid, { status: 'ringing' });
      const lookup = await provider.lookupCall(lostDial(to, attemptedAt));
      expect(lookup.kind === 'found' && lookup.providerCallId).toBe(uuid);
      expect(lookup.kind === 'found' && lookup.events.map((event) => [event.type, event.runId, event.providerCallId])).toEqual([['ringing', 7, uuid]]);
    });

    it('finds an ended call by its detail record, with its duration and cost', async () => {
      const to = nextCallee();
      const { attemptedAt, uuid } = await dialLosingTheAnswer(to);
      fake.setCallStatus(uuid, {
        status: 'completed',
        answerTime: new Date(attemptedAt.getTime() + 5_000),
        endTime: new Date(),
        duration: 12,
        totalCost: '0.00850',
        hangupCauseName: 'Normal Hangup',
      });
      const lookup = await provider.lookupCall(lostDial(to, attemptedAt));
      expect(lookup.kind === 'found' && lookup.providerCallId).toBe(uuid);
      expect(lookup.kind === 'found' && lookup.events.map((event) => event.type)).toEqual(['ringing', 'answered', 'completed']);
      expect(lookup.kind === 'found' && lookup.events[2]).toMatchObject({ durationSeconds: 12, cost: { amount: 0.0085, currency: 'USD' } });
    });

    it('reads every page of detail records, twenty at a time', async () => {
      const to = nextCallee();
      const { attemptedAt, uuid } = await dialLosingTheAnswer(to);
      fake.setCallStatus(uuid, { status: 'busy', endTime: new Date(), hangupCauseName: 'Busy Line' });
      // Twenty-five later calls between the same numbers, outside the dial's window, ended after ours: the list shows them first.
      const later = new Date(attemptedAt.getTime() + 10 * 60_000);
      for (let i = 0; i < 25; i++) {
        const { providerCallId } = await provider.placeCall(dial({ to, from: FROM }));
        fake.setCallStatus(providerCallId, { status: 'busy', dateCreated: later, endTime: later, hangupCauseName: 'Busy Line' });
      }
      const before = fake.requests.length;
      const lookup = await provider.lookupCall(lostDial(to, attemptedAt));
      expect(lookup.kind === 'found' && lookup.providerCallId).toBe(uuid);
      expect(lookup.kind === 'found' && lookup.events.map((event) => event.type)).toEqual(['busy']);
      expect(fake.requests.slice(before).filter((request) => request.query.has('end_time__gte')).map((request) => request.query.get('offset'))).toEqual(['0', '20']);
    });

    it('cannot tell while Plivo is dialing the call (not queued, not ringing, not ended)', async () => {
      const to = nextCallee();
      const { attemptedAt } = await dialLosingTheAnswer(to);
      await expect(provider.lookupCall(lostDial(to, attemptedAt))).resolves.toEqual({ kind: 'unknown' });
    });

    it('answers unknown, never a guess, when two calls match the dial', async () => {
      const to = nextCallee();
      const { attemptedAt, uuid } = await dialLosingTheAnswer(to);
      const { providerCallId } = await provider.placeCall(dial({ to, from: FROM }));
      fake.setCallStatus(uuid, { status: 'ringing' });
      fake.setCallStatus(providerCallId, { status: 'in-progress' });
      await expect(provider.lookupCall(lostDial(to, attemptedAt))).resolves.toEqual({ kind: 'unknown' });
    });

    it('answers unknown when no call started within the dial\'s time, or between its numbers', async () => {
      const to = nextCallee();
      const { attemptedAt, uuid } = await dialLosingTheAnswer(to);
      fake.setCallStatus(uuid, { status: 'ringing' });
      const later = new Date(attemptedAt.getTime() + 10 * 60_000);
      await expect(provider.lookupCall(lostDial(to, later))).resolves.toEqual({ kind: 'unknown' });
      await expect(provider.lookupCall(lostDial(nextCallee(), attemptedAt))).resolves.toEqual({ kind: 'unknown' });
      fake.setCallStatus(uuid, { status: 'completed', endTime: new Date(), answerTime: new Date(), duration: 3 });
      await expect(provider.lookupCall(lostDial(to, later))).resolves.toEqual({ kind: 'unknown' });
    });

    it('passes Plivo\'s refusal on, so the dialer knows it could not ask', async () => {
      fake.failNext('server_error');
      await expect(provider.lookupCall(lostDial(nextCallee(), new Date()))).rejects.toBeInstanceOf(PlivoApiError);
    });
  });

  describe('hanging up', () => {
    it('hangs up a ringing call request, and Plivo reports it canceled', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      await fake.ring(providerCallId);
      const before = receiver.received.length;
      await expect(provider.hangup(reference(providerCallId))).resolves.toBe(true);
      expect(fake.requests.at(-1)).toMatchObject({ method: 'DELETE', path: `/v1/Account/${fake.authId}/Request/${providerCallId}/` });
      expect(fake.call(providerCallId).status).toBe('cancel');
      await waitFor(() => receiver.since(before, '/status/').length > 0);
      const [callback] = receiver.since(before, '/status/');
      expect(callback.verdict).toBe(200);
      expect(provider.parseWebhook('status', callback.request).events).toEqual([{ type: 'canceled', occurredAt: expect.any(String) }]);
    });

    it('cancels a call still waiting in Plivo\'s queue', async () => {
      fake.queueCalls = true;
      const { providerCallId } = await provider.placeCall(dial());
      fake.setCallStatus(providerCallId, { status: 'queued' });
      await expect(provider.hangup(reference(providerCallId))).resolves.toBe(true);
      expect(fake.call(providerCallId).status).toBe('cancel');
    });

    it('does not end an answered call, nor one that is over', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      fake.setCallStatus(providerCallId, { status: 'in-progress' });
      await expect(provider.hangup(reference(providerCallId))).resolves.toBe(false);
      expect(fake.call(providerCallId).status).toBe('in-progress');
      fake.setCallStatus(providerCallId, { status: 'completed' });
      await expect(provider.hangup(reference(providerCallId))).resolves.toBe(false);
      await expect(provider.hangup(reference(null))).resolves.toBe(false);
    });
  });

  describe('ending a call whatever its state', () => {
    it('hangs up an answered call with DELETE /Call/{uuid}/, and Plivo reports it completed', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      await fake.ring(providerCallId);
      await fake.answer(providerCallId);
      const before = receiver.received.length;
      await expect(provider.endCall(reference(providerCallId))).resolves.toBe(true);
      expect(fake.requests.at(-1)).toMatchObject({ method: 'DELETE', path: `/v1/Account/${fake.authId}/Call/${providerCallId}/` });
      expect(fake.call(providerCallId).status).toBe('completed');
      await waitFor(() => receiver.since(before, '/status/').length > 0);
      const [callback] = receiver.since(before, '/status/');
      expect(provider.parseWebhook('status', callback.request).events).toEqual([expect.objectContaining({ type: 'completed' })]);
    });

    it('hangs up the live call when Plivo refuses to hang up its answered request as such', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      await fake.ring(providerCallId);
      await fake.answer(providerCallId);
      fake.failNext({ status: 400, error: 'call request already answered' });
      await expect(provider.endCall(reference(providerCallId))).resolves.toBe(true);
      expect(fake.requests.slice(-2).map((request) => `${request.method} ${request.path}`)).toEqual([
        `DELETE /v1/Account/${fake.authId}/Request/${providerCallId}/`,
        `DELETE /v1/Account/${fake.authId}/Call/${providerCallId}/`,
      ]);
      expect(fake.call(providerCallId).status).toBe('completed');
    });

    it('passes a throttled hang-up on, without deleting the call', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      await fake.ring(providerCallId);
      await fake.answer(providerCallId);
      fake.failNext('throttle');
      await expect(provider.endCall(reference(providerCallId))).rejects.toBeInstanceOf(PlivoApiError);
      expect(fake.call(providerCallId).status).toBe('in-progress');
    });

    it('hangs up a ringing call request as such', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      await fake.ring(providerCallId);
      await expect(provider.endCall(reference(providerCallId))).resolves.toBe(true);
      expect(fake.requests.at(-1)).toMatchObject({ method: 'DELETE', path: `/v1/Account/${fake.authId}/Request/${providerCallId}/` });
      expect(fake.call(providerCallId).status).toBe('cancel');
    });

    it('answers false for a call that is over, or without a UUID', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      fake.setCallStatus(providerCallId, { status: 'completed' });
      await expect(provider.endCall(reference(providerCallId))).resolves.toBe(false);
      await expect(provider.endCall(reference(null))).resolves.toBe(false);
    });
  });

  describe('verifying webhooks', () => {
    const url = 'https://voice.example.test/api/v1/telephony/plivo/status/7';
    const fields = { CallUUID: 'c-1', RequestUUID: 'c-1', CallStatus: 'ringing', Event: 'Ring' };

    it('accepts a request Plivo signed', () => {
      expect(() => provider.verifyWebhook(fake.signedRequest(url, fields), fake.credentials, Date.now())).not.toThrow();
    });

    it('accepts a subaccount\'s request: V3 made with its token, Ma-V3 with the main account\'s', () => {
      const subaccount = new PlivoFake({ authId: 'SAFAKEPLIVOSUBACCT01', mainAccountAuthToken: 'm'.repeat(40) });
      expect(() => provider.verifyWebhook(subaccount.signedRequest(url, fields), subaccount.credentials, Date.now())).not.toThrow();
    });

    it('accepts the main account\'s signature alone', () => {
      const request = fake.signedRequest(url, fields);
      delete request.headers['x-plivo-signature-v3'];
      expect(() => provider.verifyWebhook(request, fake.credentials, Date.now())).not.toThrow();
    });

    it('rejects a request without signature or nonce with 401', () => {
      expect(rejection(() => provider.verifyWebhook(fake.signedRequest(url, fields, { signature: null }), fake.credentials, Date.now()))).toBe(401);
      const noNonce = fake.signedRequest(url, fields);
      delete noNonce.headers['x-plivo-signature-v3-nonce'];
      expect(rejection(() => provider.verifyWebhook(noNonce, fake.credentials, Date.now()))).toBe(401);
    });

    it('rejects a forged or altered request with 403', () => {
      const forged = fake.signedRequest(url, fields, { authToken: 'z'.repeat(40) });
      expect(rejection(() => provider.verifyWebhook(forged, fake.credentials, Date.now()))).toBe(403);
      const signed = fake.signedRequest(url, fields);
      const tampered = { ...signed, rawBody: Buffer.from(signed.rawBody.toString().replace('CallStatus=ringing', 'CallStatus=completed')) };
      expect(rejection(() => provider.verifyWebhook(tampered, fake.credentials, Date.now()))).toBe(403);
      expect(rejection(() => provider.verifyWebhook({ ...signed, url: url.replace('/7', '/8') }, fake.credentials, Date.now()))).toBe(403);
      const otherNonce = { ...signed, headers: { ...signed.headers, 'x-plivo-signature-v3-nonce': '1' } };
      expect(rejection(() => provider.verifyWebhook(otherNonce, fake.credentials, Date.now()))).toBe(403);
    });

    it('rejects everything when the configuration has no usable credentials', () => {
      expect(rejection(() => provider.verifyWebhook(fake.signedRequest(url, fields), null, Date.now()))).toBe(403);
    });

    it('gives an exact replay the same replay key, and a new delivery another one', () => {
      const signed = fake.signedRequest(url, fields);
      expect(provider.replayKey({ ...signed })).toBe(provider.replayKey(signed));
      expect(provider.replayKey(fake.signedRequest(url, fields))).not.toBe(provider.replayKey(signed));
      // A copy whose signature header was reworded (still verifying) is the same delivery.
      const reworded = { ...signed, headers: { ...signed.headers, 'x-plivo-signature-v3': ` ${signed.headers['x-plivo-signature-v3']},x` } };
      expect(() => provider.verifyWebhook(reworded, fake.credentials, Date.now())).not.toThrow();
      expect(provider.replayKey(reworded)).toBe(provider.replayKey(signed));
    });

    it('gives a copy that moves its signature to the main-account header, the other left empty, the same replay key', () => {
      const signed = fake.signedRequest(url, fields);
      const moved = fake.signedRequest(url, fields, { nonce: signed.headers['x-plivo-signature-v3-nonce'], accountSignatureMoved: true });
      expect(() => provider.verifyWebhook(moved, fake.credentials, Date.now())).not.toThrow();
      expect(provider.replayKey(moved)).toBe(provider.replayKey(signed));
      expect(provider.replayKey(moved)).not.toBeNull();
    });

    it('verifies the callbacks the fake sends over HTTP, as our API receives them', async () => {
      const { providerCallId } = await provider.placeCall(dial());
      const before = receiver.received.length;
      await fake.ring(providerCallId);
      const [callback] = receiver.since(before, '/status/');
      expect(callback.verdict).toBe(200);
      expect(provider.parseWebhook('status', callback.request)).toEqual({ providerCallId, events: [{ type: 'ringing', occurredAt: expect.any(String) }] });
    });
  });

  describe('reading webhooks', () => {
    const url = 'https://voice.example.test/api/v1/telephony/plivo/status/7';
    const read = (kind: 'answer' | 'status' | 'recording', fields: Record<string, string>) =>
      provider.parseWebhook(kind, fake.signedRequest(url, { CallUUID: 'call-1', RequestUUID: 'req-1', ...fields }));

    it('names the call by its request UUID, or its CallUUID when that is all there is', () => {
      expect(read('status', { CallStatus: 'ringing' }).providerCallId).toBe('req-1');
      expect(provider.parseWebhook('recording', fake.signedRequest(url, { CallUUID: 'call-1' })).providerCallId).toBe('call-1');
    });

    it('reads the answer request as answered', () => {
      expect(read('answer', { CallStatus: 'in-progress', Event: 'StartApp' }).events).toEqual([{ type: 'answered', occurredAt: expect.any(String) }]);
    });

    it.each([
      ['true', 'machine'],
      ['false', 'human'],
    ])('reads machine detection Machine=%s as answered by a %s', (machine, answeredBy) => {
      expect(read('status', { CallStatus: 'in-progress', Event: 'MachineDetection', Machine: machine }).events).toEqual([
        { type: 'answered', occurredAt: expect.any(String), answeredBy },
      ]);
    });

    it('reads the hangup of a completed call with its duration and cost', () => {
      expect(read('status', { CallStatus: 'completed', Event: 'Hangup', Duration: '61', BillDuration: '120', TotalCost: '0.01700' }).events).toEqual([
        { type: 'completed', occurredAt: expect.any(String), durationSeconds: 61, cost: { amount: 0.017, currency: 'USD' } },
      ]);
    });

    it.each([
      ['busy', { type: 'busy' }],
      ['no-answer', { type: 'no_answer' }],
      ['timeout', { type: 'no_answer' }],
      ['cancel', { type: 'canceled' }],
      ['failed', { type: 'failed', reason: 'invalid_number' }],
    ])('reads the hangup of a %s call', (status, event) => {
      expect(read('status', { CallStatus: status, Event: 'Hangup', HangupCauseName: 'Unallocated Number' }).events).toEqual([
        { occurredAt: expect.any(String), ...event },
      ]);
    });

    it('reads a recording callback as the file at RecordUrl', () => {
      const recordUrl = 'https://media.plivo.com/v1/Account/MA1/Recording/r-1.wav';
      expect(read('recording', { RecordUrl: recordUrl, RecordingID: 'r-1', RecordingDuration: '12' }).events).toEqual([
        { type: 'recording', occurredAt: expect.any(String), recordingUrl: recordUrl },
      ]);
      expect(read('recording', { RecordingID: 'r-1' }).events).toEqual([]);
    });
  });

  describe('answering', () => {
    const context = { runId: 7, sessionToken: 'tok-7', streamUrl: 'wss://agent.example.test/media?session_token=tok-7&x=1' };

    it('streams the call both ways to the agent runtime, μ-law 8 kHz, holding the call while the stream lasts', () => {
      const answer = provider.answerInstructions({ ...context, settings: {} });
      expect(answer.contentType).toBe('application/xml; charset=utf-8');
      expect(answer.body).toBe(
        '<?xml version="1.0" encoding="UTF-8"?><Response>' +
          '<Stream bidirectional="true" keepCallAlive="true" contentType="audio/x-mulaw;rate=8000" extraHeaders="runId=7">' +
          'wss://agent.example.test/media?session_token=tok-7&amp;x=1</Stream></Response>',
      );
    });

    it('records the whole session first when recording is on, reporting to our recording URL', () => {
      const answer = provider.answerInstructions({ ...context, settings: { record: true } });
      expect(answer.body).toContain(
        `<Response><Record recordSession="true" redirect="false" fileFormat="wav" maxLength="86400" callbackUrl="${receiver.base}/api/v1/telephony/plivo/recording/7" callbackMethod="POST"/><Stream `,
      );
    });

    it('escapes what it writes into the XML', () => {
      const answer = provider.answerInstructions({ ...context, streamUrl: 'wss://agent.example.test/m?a=<"b">&c=\'d\'', settings: {} });
      expect(answer.body).toContain('>wss://agent.example.test/m?a=&lt;&quot;b&quot;&gt;&amp;c=&apos;d&apos;</Stream>');
    });

    it('hangs up on a machine when the configuration says so', () => {
      const settings = { answering_machine_detection: true, machine_action: 'hangup' };
      expect(provider.answerInstructions({ ...context, settings, answeredBy: 'machine' }).body).toBe(
        '<?xml version="1.0" encoding="UTF-8"?><Response><Hangup/></Response>',
      );
      expect(provider.answerInstructions({ ...context, settings, answeredBy: 'human' }).body).toContain('<Stream ');
    });

    it('takes a whole call through the fake: dial, ring, answer, machine detected, completed, recording fetched', async () => {
      const settings = { answering_machine_detection: true, machine_action: 'talk', record: true };
      receiver.answerSettings = settings;
      const { providerCallId } = await provider.placeCall(dial({ settings }));
      await fake.ring(providerCallId);
      const answer = await fake.answer(providerCallId);
      expect(answer.status).toBe(200);
      expect(answer.body).toContain('<Record recordSession="true"');
      expect(answer.body).toContain('wss://agent.example.test/media?session_token=tok-7</Stream>');

      const before = receiver.received.length;
      await fake.detectMachine(providerCallId, true);
      await fake.complete(providerCallId, { durationSeconds: 3, totalCost: '0.00850' });
      await fake.recordingReady(providerCallId);
      const callbacks = receiver.received.slice(before);
      expect(callbacks.map(({ verdict }) => verdict)).toEqual([200, 200, 200]);
      const events = callbacks.flatMap(({ request }) =>
        provider.parseWebhook(request.url.includes('/recording/') ? 'recording' : 'status', request).events,
      );
      expect(events).toEqual([
        { type: 'answered', occurredAt: expect.any(String), answeredBy: 'machine' },
        { type: 'completed', occurredAt: expect.any(String), durationSeconds: 3, cost: { amount: 0.0085, currency: 'USD' } },
        { type: 'recording', occurredAt: expect.any(String), recordingUrl: expect.stringContaining(`${fake.url}/v1/Account/${fake.authId}/Recording/`) },
      ]);

      const recording = await provider.fetchRecording(events[2].recordingUrl!, fake.credentials);
      expect(recording.contentType).toBe('audio/wav');
      expect(recording.body.subarray(0, 4).toString()).toBe('RIFF');
      expect(recording.body.length).toBe(44 + 3 * 8000 * 2);
      expect(fake.requests.at(-1)!.headers.authorization).toMatch(/^Basic /);
    });

    it('lets Plivo end a call a machine answered when the configuration says hang up', async () => {
      const { providerCallId } = await provider.placeCall(dial({ settings: { answering_machine_detection: true, machine_action: 'hangup' } }));
      await fake.answer(providerCallId);
      const before = receiver.received.length;
      await fake.detectMachine(providerCallId, true);
      const types = receiver.received.slice(before).flatMap(({ request }) => provider.parseWebhook('status', request).events.map((event) => event.type));
      expect(types).toEqual(['answered', 'completed']);
      expect(fake.call(providerCallId).status).toBe('completed');
    });
  });

  describe('recordings', () => {
    it('never fetches a recording from, nor sends the credentials to, a host that is not Plivo', async () => {
      expect(await downloadElsewhere((url) => provider.fetchRecording(url, fake.credentials))).toEqual({ authorizations: [], refused: true });
    });

    it('never follows a redirect to an internal address', async () => {
      const download = (url: string) => provider.fetchRecording(url, fake.credentials);
      expect(await downloadElsewhere(download, (elsewhere) => fake.redirectTo(elsewhere))).toEqual({ authorizations: [], refused: true });
      await expect(download(fake.redirectTo('https://metadata.internal/computeMetadata/v1/'))).rejects.toThrow(/refused to follow a redirect/);
    });
  });

  describe('artifacts', () => {
    it('leaves the transcript to the agent runtime and the recording to fetchRecording', async () => {
      await expect(provider.collectArtifacts()).resolves.toEqual({ transcript: [], recording: null });
    });
  });

  describe('checking credentials with Plivo', () => {
    it('accepts working credentials and names refused ones', async () => {
      await expect(provider.checkCredentials(fake.credentials)).resolves.toEqual({ ok: true });
      await expect(provider.checkCredentials({ ...fake.credentials, auth_token: 'w'.repeat(40) })).resolves.toMatchObject({ ok: false, reason: 'unauthorized' });
      await expect(provider.checkCredentials({ auth_id: 'x' })).resolves.toMatchObject({ ok: false, reason: 'invalid_credentials' });
    });
  });

  describe('validating the configuration', () => {
    it('accepts an Auth ID with its Auth Token, for a main account or a subaccount', () => {
      expect(provider.validateCredentials(fake.credentials)).toEqual([]);
      expect(provider.validateCredentials({ auth_id: 'SAFAKEPLIVOSUBACCT01', auth_token: fake.authToken })).toEqual([]);
    });

    it('says what is missing or mis-shaped', () => {
      expect(provider.validateCredentials(null)).toEqual(['credentials are required: auth_id and auth_token']);
      expect(provider.validateCredentials({ auth_id: 'MA123', auth_token: 'short', account_sid: 'AC1' })).toEqual([
        'credentials.auth_id must be a Plivo Auth ID: "MA" or "SA" followed by 18 capital letters or digits',
        'credentials.auth_token must be the Auth Token shown with the Auth ID (at least 20 characters, no spaces)',
        'credentials.account_sid is not a Plivo credential (known: auth_id, auth_token)',
      ]);
    });

    it.each([
      ['NUL', `${fake.authToken}\u0000`],
      ['DEL', `${fake.authToken}\u007f`],
      ['a letter beyond ASCII', `${fake.authToken}É`],
    ])('rejects an Auth Token with %s: it goes into the Authorization header', (_, authToken) => {
      expect(provider.validateCredentials({ ...fake.credentials, auth_token: authToken })).toEqual([
        'credentials.auth_token must be visible ASCII characters only (no spaces or control characters): it is sent in an HTTP header',
      ]);
    });

    it('rejects keys named like Object.prototype members as unknown credentials', () => {
      expect(provider.validateCredentials({ ...fake.credentials, toString: 'x', constructor: 'y' })).toEqual([
        'credentials.toString is not a Plivo credential (known: auth_id, auth_token)',
        'credentials.constructor is not a Plivo credential (known: auth_id, auth_token)',
      ]);
    });

    it('accepts the documented settings and rejects anything else with a message', () => {
      expect(provider.validateSettings({ answering_machine_detection: true, machine_action: 'hangup', record: false, agent_runtime_url: 'ws://127.0.0.1:9000/media' })).toEqual([]);
      expect(provider.validateSettings({ record: 'yes', agent_runtime_url: 'not a url', amd: true })).toEqual([
        'settings.record must be true or false',
        'settings.agent_runtime_url must be a ws:// or wss:// URL',
        'settings.amd is not a Plivo setting (known: answering_machine_detection, machine_action, record, agent_runtime_url)',
      ]);
    });
  });
});
