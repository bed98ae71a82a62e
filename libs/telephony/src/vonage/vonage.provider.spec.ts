import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { AppConfig } from '@app/config';
import { downloadElsewhere } from '../../../../test/fakes/provider-spec-calls';
import { VonageFake } from '../../../../test/fakes/vonage-fake';
import { waitFor } from '../../../../test/support/wait-for';
import { callbackUrlsFor } from '../callback-urls';
import { CarrierError } from '../carrier-error';
import { ParsedWebhook, WebhookKind, WebhookRequest } from '../carrier-webhooks';
import { CallReference, PlaceCallRequest } from '../telephony-provider';
import { VonageProvider } from './vonage.provider';

/** Our side of the webhooks: verifies and parses what the fake sends, and answers the NCCO. */
class Receiver {
  readonly received: { kind: WebhookKind; request: WebhookRequest; parsed: ParsedWebhook }[] = [];
  private server: Server | null = null;
  base = '';

  constructor(
    private readonly provider: () => VonageProvider,
    private readonly credentials: () => Record<string, unknown>,
    private readonly settings: () => Record<string, unknown>,
  ) {}

  async start(): Promise<string> {
    this.server = createServer((request, response) => {
      void readRequest(request, this.base).then((webhook) => {
        const [, kind, runId] = /\/telephony\/vonage\/(answer|status|recording)\/(\d+)/.exec(webhook.url) ?? [];
        try {
          this.provider().verifyWebhook(webhook, this.credentials(), Date.now());
        } catch (error) {
          response.writeHead((error as { status?: number }).status ?? 500).end();
          return;
        }
        this.received.push({ kind: kind as WebhookKind, request: webhook, parsed: this.provider().parseWebhook(kind as WebhookKind, webhook) });
        if (kind !== 'answer') return void response.writeHead(204).end();
        const answer = this.provider().answerInstructions({
          runId: Number(runId),
          streamUrl: `wss://agents.example.com/media?token=tok-${runId}`,
          sessionToken: `tok-${runId}`,
          settings: this.settings(),
        });
        response.writeHead(200, { 'content-type': answer.contentType }).end(answer.body);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
    return this.base;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  async waitFor(count: number): Promise<void> {
    await waitFor(async () => (this.received.length >= count ? true : undefined), { what: `${count} webhook(s) from Vonage` });
  }
}

function readRequest(request: IncomingMessage, base: string): Promise<WebhookRequest> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () =>
      resolve({
        method: request.method ?? 'POST',
        url: `${base}${request.url}`,
        headers: Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : v])),
        rawBody: Buffer.concat(chunks),
      }),
    );
  });
}

describe('VonageProvider against the Vonage fake', () => {
  const fake = new VonageFake({ callsPerSecond: Infinity });
  let provider: VonageProvider;
  let settings: Record<string, unknown> = {};
  const receiver = new Receiver(
    () => provider,
    () => fake.credentials,
    () => settings,
  );

  beforeAll(async () => {
    const base = await fake.start();
    const publicBase = await receiver.start();
    provider = new VonageProvider({ carrierApiUrls: { vonage: base }, publicBaseUrl: publicBase } as unknown as AppConfig);
  });
  afterAll(async () => {
    await fake.stop();
    await receiver.stop();
  });
  beforeEach(() => {
    fake.reset();
    receiver.received.length = 0;
    settings = {};
  });

  function dialRequest(overrides: Partial<PlaceCallRequest> = {}): PlaceCallRequest {
    return {
      runId: 42,
      organizationId: 7,
      to: '+447700900000',
      from: '+447700900001',
      credentials: fake.credentials,
      settings,
      maxCallDurationSeconds: 600,
      callbacks: callbackUrlsFor(receiver.base, 'vonage', 42),
      ...overrides,
    };
  }

  function reference(overrides: Partial<CallReference> = {}): CallReference {
    return { runId: 42, organizationId: 7, providerCallId: null, credentials: fake.credentials, settings: {}, ...overrides };
  }

  async function dialError(request: PlaceCallRequest, client = provider): Promise<unknown> {
    return client.placeCall(request).then(
      () => {
        throw new Error('the call was expected to be refused');
      },
      (error: unknown) => error,
    );
  }

  describe('placeCall', () => {
    it('creates the call with an RS256 application JWT and the documented JSON body', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());

      const [request] = fake.dialRequests();
      const token = String(request.headers.authorization).replace(/^Bearer /, '');
      expect(JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString())).toEqual({ alg: 'RS256', typ: 'JWT' });
      expect(request.jwtClaims).toEqual({
        application_id: fake.applicationId,
        iat: expect.any(Number),
        exp: expect.any(Number),
        jti: expect.stringMatching(/^[0-9a-f-]{36}$/),
      });
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.body).toEqual({
        to: [{ type: 'phone', number: '447700900000' }],
        from: { type: 'phone', number: '447700900001' },
        answer_url: [`${receiver.base}/api/v1/telephony/vonage/answer/42`],
        answer_method: 'POST',
        event_url: [`${receiver.base}/api/v1/telephony/vonage/status/42`],
        event_method: 'POST',
        length_timer: 600,
      });
      expect(providerCallId).toBe(fake.callForRun(42)?.uuid);
    });

    it('signs a fresh JWT for every request', async () => {
      await provider.placeCall(dialRequest());
      await provider.placeCall(dialRequest());

      const [first, second] = fake.dialRequests().map((request) => request.jwtClaims?.jti);
      expect(first).not.toBe(second);
    });

    it.each([
      ['hangup', 'hangup'],
      ['talk', 'continue'],
    ])('with answering-machine detection and machine_action %s asks for machine_detection %s', async (action, detection) => {
      await provider.placeCall(dialRequest({ settings: { answering_machine_detection: true, machine_action: action } }));

      expect(fake.dialRequests()[0].body).toMatchObject({ machine_detection: detection });
    });

    it('asks for no machine detection when it is off, and keeps length_timer within a day', async () => {
      await provider.placeCall(dialRequest({ maxCallDurationSeconds: 100_000 }));

      expect(fake.dialRequests()[0].body).not.toHaveProperty('machine_detection');
      expect(fake.dialRequests()[0].body).toMatchObject({ length_timer: 86_400 });
    });

    it('refuses a number that is not E.164 before sending anything', async () => {
      expect(await dialError(dialRequest({ to: 'call me maybe' }))).toMatchObject({ reason: 'invalid_number', permanent: true, notProcessed: true });
      expect(await dialError(dialRequest({ from: '+12' }))).toMatchObject({ reason: 'invalid_from_number', permanent: true });
      expect(fake.requests).toHaveLength(0);
    });

    it('refuses unusable credentials before sending anything', async () => {
      const error = await dialError(dialRequest({ credentials: { ...fake.credentials, private_key: 'not a key' } }));

      expect(error).toMatchObject({ reason: 'credentials_invalid', permanent: true });
      expect(fake.requests).toHaveLength(0);
    });
  });

  describe('placeCall errors', () => {
    it('a 429 is throttled and not processed; without Retry-After it waits out the rolling second', async () => {
      fake.throttleNext();

      const error = await dialError(dialRequest());

      expect(error).toBeInstanceOf(CarrierError);
      expect(error).toMatchObject({ reason: 'carrier_throttled', throttled: true, notProcessed: true, permanent: false, retryAfterMs: 1000 });
      expect(fake.calls.size).toBe(0);
    });

    it('rejects, not queues, a fourth call creation within a second', async () => {
      const strict = new VonageFake();
      const base = await strict.start();
      try {
        const client = new VonageProvider({ carrierApiUrls: { vonage: base }, publicBaseUrl: receiver.base } as unknown as AppConfig);
        const request = { ...dialRequest(), credentials: strict.credentials };
        const results = await Promise.allSettled([1, 2, 3, 4].map(() => client.placeCall(request)));

        expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(3);
        const [rejected] = results.filter((result): result is PromiseRejectedResult => result.status === 'rejected');
        expect(rejected.reason).toMatchObject({ throttled: true, notProcessed: true });
        expect(strict.calls.size).toBe(3);
      } finally {
        await strict.stop();
      }
    });

    it('a 401 is a permanent unauthorized rejection', async () => {
      fake.failNext('unauthorized');

      expect(await dialError(dialRequest())).toMatchObject({ reason: 'carrier_unauthorized', permanent: true, carrierCode: 'unauthorized' });
    });

    it("a JWT signed with another application's key is refused by Vonage as unauthorized", async () => {
      const other = new VonageFake();

      const error = await dialError(dialRequest({ credentials: { ...fake.credentials, private_key: other.privateKeyPem } }));

      expect(error).toMatchObject({ reason: 'carrier_unauthorized', permanent: true, notProcessed: true });
      expect(fake.calls.size).toBe(0);
    });

    it('a 400 naming to[0].number is a permanent invalid_number', async () => {
      fake.failNext('invalid_number');

      expect(await dialError(dialRequest())).toMatchObject({ reason: 'invalid_number', permanent: true, carrierCode: 'invalid-params' });
    });

    it('a suspended account is permanent', async () => {
      fake.failNext('account_suspended');

      expect(await dialError(dialRequest())).toMatchObject({ reason: 'account_suspended', permanent: true });
    });

    it('a low balance is permanent insufficient funds', async () => {
      fake.failNext('low_balance');

      expect(await dialError(dialRequest())).toMatchObject({ reason: 'insufficient_funds', permanent: true });
    });

    it('a 503 leaves the outcome open: a proxy answers it for a creation whose answer it lost, and there is no idempotency key', async () => {
      fake.failNext('unavailable');

      expect(await dialError(dialRequest())).toMatchObject({ reason: 'carrier_unavailable', permanent: false, notProcessed: false });
    });

    it('a 500 leaves the outcome open', async () => {
      fake.failNext('server_error');

      expect(await dialError(dialRequest())).toMatchObject({ reason: 'carrier_error', permanent: false, notProcessed: false });
    });

    it('a connection reset is an unknown outcome, which Vonage cannot resolve by run', async () => {
      fake.failNext('reset');

      const error = await dialError(dialRequest());

      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(CarrierError);
      expect(fake.calls.size).toBe(1);
      expect(await provider.lookupCall(reference())).toEqual({ kind: 'unknown' });
    });

    it('a refused connection never reached Vonage: not processed', async () => {
      const gone = new VonageFake();
      const base = await gone.start();
      await gone.stop();
      const client = new VonageProvider({ carrierApiUrls: { vonage: base }, publicBaseUrl: receiver.base } as unknown as AppConfig);

      expect(await dialError({ ...dialRequest(), credentials: gone.credentials }, client)).toMatchObject({
        reason: 'carrier_unreachable',
        notProcessed: true,
      });
    });
  });

  describe('checkCredentials', () => {
    it('lists one call with the application JWT, and answers ok', async () => {
      expect(await provider.checkCredentials(fake.credentials)).toEqual({ ok: true });

      expect(fake.requests).toHaveLength(1);
      expect(fake.requests[0]).toMatchObject({ method: 'GET', path: '/v1/calls', query: { page_size: '1' } });
      expect(fake.requests[0].jwtClaims).toMatchObject({ application_id: fake.applicationId });
    });

    it("answers unauthorized for a JWT signed with another application's key (401)", async () => {
      const other = new VonageFake();

      const check = await provider.checkCredentials({ ...fake.credentials, private_key: other.privateKeyPem });

      expect(check).toMatchObject({ ok: false, reason: 'unauthorized', message: expect.stringContaining('401') });
    });

    it('answers invalid_credentials for a bad shape, before sending anything', async () => {
      expect(await provider.checkCredentials({ application_id: 'nope' })).toMatchObject({ ok: false, reason: 'invalid_credentials' });
      expect(fake.requests).toHaveLength(0);
    });

    it('does not take a 404 (nothing a working account gets, e.g. a wrong API base) for refused credentials', async () => {
      const misrouted = new VonageProvider({ carrierApiUrls: { vonage: `${fake.url}/elsewhere` }, publicBaseUrl: receiver.base } as unknown as AppConfig);

      await expect(misrouted.checkCredentials(fake.credentials)).rejects.toThrow(/404/);
    });

    it('throws when Vonage cannot answer (5xx) or cannot be reached', async () => {
      fake.failNextCallListing('server_error');
      await expect(provider.checkCredentials(fake.credentials)).rejects.toThrow(/500/);

      const gone = new VonageFake();
      const base = await gone.start();
      await gone.stop();
      const client = new VonageProvider({ carrierApiUrls: { vonage: base }, publicBaseUrl: receiver.base } as unknown as AppConfig);
      await expect(client.checkCredentials(gone.credentials)).rejects.toMatchObject({ reason: 'carrier_unreachable' });
    });
  });

  describe('a call through its webhooks', () => {
    it('answers with an NCCO streaming to the agent, records, reports and is fetched', async () => {
      settings = { record: true };
      const { providerCallId } = await provider.placeCall(dialRequest({ settings }));

      await fake.sendCallEvent(providerCallId, 'ringing');
      const answer = await fake.answerCall(providerCallId);
      await fake.sendCallEvent(providerCallId, 'answered');
      await fake.sendCallEvent(providerCallId, 'completed');
      const recording = await fake.sendRecording(providerCallId, Buffer.from('RIFF-recording'));

      expect(answer.status).toBe(200);
      expect(answer.ncco).toEqual([
        expect.objectContaining({ action: 'record', eventUrl: [`${receiver.base}/api/v1/telephony/vonage/recording/42`] }),
        expect.objectContaining({
          action: 'connect',
          endpoint: [expect.objectContaining({ type: 'websocket', uri: 'wss://agents.example.com/media?token=tok-42' })],
        }),
      ]);
      expect(receiver.received.map((webhook) => [webhook.kind, webhook.parsed.events.map((event) => event.type)])).toEqual([
        ['status', ['ringing']],
        ['answer', []],
        ['status', ['answered']],
        ['status', ['completed']],
        ['recording', ['recording']],
      ]);
      const completed = receiver.received[3].parsed;
      expect(completed.providerCallId).toBe(providerCallId);
      expect(completed.events[0]).toMatchObject({ durationSeconds: expect.any(Number), cost: { amount: 0.0045, currency: 'EUR' } });
      expect(receiver.received[4].parsed.events[0].recordingUrl).toBe(recording.recordingUrl);

      const file = await provider.fetchRecording(recording.recordingUrl, fake.credentials);
      expect(file).toEqual({ contentType: 'audio/wav', body: Buffer.from('RIFF-recording') });
      expect(fake.requests.at(-1)?.jwtClaims?.application_id).toBe(fake.applicationId);
    });
  });

  describe('lookupCall', () => {
    it('reads a call that has only started as found, with nothing to report', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());

      expect(await provider.lookupCall(reference({ providerCallId }))).toEqual({ kind: 'found', providerCallId, events: [] });
      expect(fake.requests.at(-1)).toMatchObject({ method: 'GET', path: `/v1/calls/${providerCallId}` });
    });

    it('reads a completed call with its duration and price', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());
      await fake.sendCallEvent(providerCallId, 'answered');
      await fake.sendCallEvent(providerCallId, 'completed');

      const lookup = await provider.lookupCall(reference({ providerCallId }));

      expect(lookup).toEqual({
        kind: 'found',
        providerCallId,
        events: [
          {
            type: 'completed',
            runId: 42,
            organizationId: 7,
            provider: 'vonage',
            providerCallId,
            occurredAt: expect.stringMatching(/Z$/),
            durationSeconds: expect.any(Number),
            cost: { amount: 0.0045, currency: 'EUR' },
          },
        ],
      });
    });

    it('reads a call under way as answered, at a time it marks as estimated (the call\'s start, not its answer)', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());
      await fake.sendCallEvent(providerCallId, 'answered');

      const lookup = await provider.lookupCall(reference({ providerCallId }));

      expect(lookup.kind === 'found' && lookup.events).toEqual([expect.objectContaining({ type: 'answered', answerTimeEstimated: true })]);
    });

    it('reads a busy call as busy', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());
      await fake.sendCallEvent(providerCallId, 'busy');

      const lookup = await provider.lookupCall(reference({ providerCallId }));

      expect(lookup.kind === 'found' && lookup.events.map((event) => event.type)).toEqual(['busy']);
    });

    it('is unknown for a uuid Vonage does not know, or without a uuid', async () => {
      expect(await provider.lookupCall(reference({ providerCallId: '63f61863-4a51-4f6b-86e1-46edebcf9356' }))).toEqual({ kind: 'unknown' });
      expect(await provider.lookupCall(reference())).toEqual({ kind: 'unknown' });
    });
  });

  describe('hangup', () => {
    it('hangs up with PUT /v1/calls/{uuid} {action: hangup}, and Vonage reports the call cancelled', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());

      expect(await provider.hangup(reference({ providerCallId }))).toBe(true);

      expect(fake.requests.at(-1)).toMatchObject({ method: 'PUT', path: `/v1/calls/${providerCallId}`, body: { action: 'hangup' } });
      await receiver.waitFor(1);
      expect(receiver.received[0].parsed).toEqual({ providerCallId, events: [expect.objectContaining({ type: 'canceled' })] });
    });

    it('leaves alone a call answered before its answered event reached us', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());
      await fake.sendCallEvent(providerCallId, 'answered');
      const before = fake.requests.length;

      expect(await provider.hangup(reference({ providerCallId }))).toBe(false);

      expect(fake.requests.slice(before).map(({ method }) => method)).toEqual(['GET']);
    });

    it('cannot hang up a call Vonage does not know, or one without a uuid', async () => {
      expect(await provider.hangup(reference({ providerCallId: '63f61863-4a51-4f6b-86e1-46edebcf9356' }))).toBe(false);
      expect(await provider.hangup(reference())).toBe(false);
    });
  });

  describe('endCall', () => {
    it('hangs up an answered call with PUT /v1/calls/{uuid} {action: hangup}, and Vonage reports it completed', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());
      await fake.sendCallEvent(providerCallId, 'answered');
      await receiver.waitFor(1);

      expect(await provider.endCall(reference({ providerCallId }))).toBe(true);

      expect(fake.requests.at(-1)).toMatchObject({ method: 'PUT', path: `/v1/calls/${providerCallId}`, body: { action: 'hangup' } });
      await receiver.waitFor(2);
      expect(receiver.received[1].parsed).toEqual({ providerCallId, events: [expect.objectContaining({ type: 'completed' })] });
    });

    it('hangs up a call that is still ringing', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());
      expect(await provider.endCall(reference({ providerCallId }))).toBe(true);
      await receiver.waitFor(1);
      expect(receiver.received[0].parsed).toEqual({ providerCallId, events: [expect.objectContaining({ type: 'canceled' })] });
    });

    it('leaves alone a call that has ended, asking for its status only', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());
      await fake.sendCallEvent(providerCallId, 'completed');
      const before = fake.requests.length;

      expect(await provider.endCall(reference({ providerCallId }))).toBe(false);

      expect(fake.requests.slice(before).map(({ method }) => method)).toEqual(['GET']);
      expect(await provider.endCall(reference())).toBe(false);
    });
  });

  describe('recordings and artifacts', () => {
    it('never sends the application JWT to a host that is not Vonage', async () => {
      await expect(provider.fetchRecording('https://evil.example.com/v1/files/x', fake.credentials)).rejects.toThrow(/Refusing/);
      await expect(provider.fetchRecording('http://api.nexmo.com/v1/files/x', fake.credentials)).rejects.toThrow(/Refusing/);
      expect(fake.requests).toHaveLength(0);
    });

    it('follows Vonage within its own hosts, but never a redirect to an internal address', async () => {
      const recording = fake.redirectTo(`${fake.url}/v1/files/nope`);
      await expect(provider.fetchRecording(recording, fake.credentials)).rejects.toThrow(/404/);
      expect(fake.requests.at(-1)?.jwtClaims?.application_id).toBe(fake.applicationId);

      const seen = await downloadElsewhere((url) => provider.fetchRecording(url, fake.credentials), (elsewhere) => fake.redirectTo(elsewhere));
      expect(seen).toEqual({ authorizations: [], refused: true });
    });

    it('says so when Vonage has no such recording', async () => {
      await expect(provider.fetchRecording(`${fake.url}/v1/files/nope`, fake.credentials)).rejects.toThrow(/404/);
    });

    it('leaves transcripts to the agent runtime and recordings to fetchRecording', async () => {
      expect(await provider.collectArtifacts()).toEqual({ transcript: [], recording: null });
    });
  });
});
