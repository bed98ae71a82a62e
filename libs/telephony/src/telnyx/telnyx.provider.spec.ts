import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { AppConfig } from '@app/config';
import { downloadElsewhere } from '../../../../test/fakes/provider-spec-calls';
import { TelnyxFake } from '../../../../test/fakes/telnyx-fake';
import { waitFor } from '../../../../test/support/wait-for';
import { CarrierError } from '../carrier-error';
import { callbackUrlsFor } from '../callback-urls';
import { ParsedWebhook, WebhookRejected } from '../carrier-webhooks';
import { CallReference } from '../telephony-provider';
import { TelnyxPlaceCallRequest } from './telnyx-dial';
import { TelnyxProvider } from './telnyx.provider';

const PUBLIC_BASE = 'https://calls.example.com';

describe('TelnyxProvider against the Telnyx fake', () => {
  const fake = new TelnyxFake();
  let provider: TelnyxProvider;

  beforeAll(async () => {
    const base = await fake.start();
    provider = new TelnyxProvider({ carrierApiUrls: { telnyx: base }, publicBaseUrl: PUBLIC_BASE } as unknown as AppConfig);
  });
  afterAll(() => fake.stop());
  beforeEach(() => fake.reset());

  function dialRequest(overrides: Partial<TelnyxPlaceCallRequest> = {}): TelnyxPlaceCallRequest {
    return {
      runId: 42,
      organizationId: 7,
      to: '+14155550100',
      from: '+14155550199',
      credentials: fake.credentials,
      settings: {},
      maxCallDurationSeconds: 600,
      callbacks: callbackUrlsFor(PUBLIC_BASE, 'telnyx', 42),
      agentStream: { url: 'wss://agents.example.com/media?token=tok-42', sessionToken: 'tok-42' },
      ...overrides,
    };
  }

  function reference(overrides: Partial<CallReference> = {}): CallReference {
    return { runId: 42, organizationId: 7, providerCallId: null, credentials: fake.credentials, settings: {}, ...overrides };
  }

  async function dialError(request: TelnyxPlaceCallRequest): Promise<unknown> {
    return provider.placeCall(request).then(
      () => {
        throw new Error('the dial was expected to fail');
      },
      (error: unknown) => error,
    );
  }

  describe('placeCall', () => {
    it('dials POST /v2/calls with the Bearer key, JSON, and the run in client_state, streaming to the agent', async () => {
      const result = await provider.placeCall(dialRequest());

      const [dial] = fake.dialRequests();
      expect(dial.headers.authorization).toBe(`Bearer ${fake.apiKey}`);
      expect(dial.headers['content-type']).toBe('application/json');
      expect(dial.body).toEqual({
        connection_id: fake.connectionId,
        to: '+14155550100',
        from: '+14155550199',
        webhook_url: 'https://calls.example.com/api/v1/telephony/telnyx/status/42',
        webhook_url_method: 'POST',
        client_state: Buffer.from('42').toString('base64'),
        command_id: 'run-42',
        timeout_secs: 30,
        time_limit_secs: 600,
        stream_url: 'wss://agents.example.com/media?token=tok-42',
        stream_track: 'inbound_track',
        stream_codec: 'PCMU',
        stream_bidirectional_mode: 'rtp',
        stream_bidirectional_codec: 'PCMU',
        stream_auth_token: 'tok-42',
      });
      expect(result.providerCallId).toBe(fake.callForRun(42)?.callControlId);
      expect(result.providerCallId).toMatch(/^v3:/);
    });

    it('asks for premium answering-machine detection and a wav recording when the settings say so', async () => {
      await provider.placeCall(dialRequest({ settings: { answering_machine_detection: true, machine_action: 'hangup', record: true } }));

      expect(fake.dialRequests()[0].body).toMatchObject({
        answering_machine_detection: 'premium',
        record: 'record-from-answer',
        record_format: 'wav',
      });
    });

    it("keeps time_limit_secs within Telnyx's 4-hour ceiling", async () => {
      await provider.placeCall(dialRequest({ maxCallDurationSeconds: 20_000 }));

      expect(fake.dialRequests()[0].body).toMatchObject({ time_limit_secs: 14_400 });
    });

    it('sends the same command_id again for a repeated dial of a run, so Telnyx places one call', async () => {
      const first = await provider.placeCall(dialRequest());
      const second = await provider.placeCall(dialRequest());

      expect(second.providerCallId).toBe(first.providerCallId);
      expect(fake.calls.size).toBe(1);
    });

    it('refuses to dial without the agent stream, before sending anything', async () => {
      const error = await dialError(dialRequest({ agentStream: undefined }));

      expect(error).toBeInstanceOf(CarrierError);
      expect(error).toMatchObject({ reason: 'agent_stream_missing', permanent: true, notProcessed: true });
      expect(fake.requests).toHaveLength(0);
    });

    it('refuses unusable credentials before sending anything', async () => {
      const error = await dialError(dialRequest({ credentials: { api_key: 'KEY1', connection_id: '1' } }));

      expect(error).toMatchObject({ reason: 'credentials_invalid', permanent: true, notProcessed: true });
      expect(fake.requests).toHaveLength(0);
    });

    it('fails for good, not with an unknown outcome, for a stored API key no Authorization header can carry', async () => {
      const error = await dialError(dialRequest({ credentials: { ...fake.credentials, api_key: 'KEY\u0000SECRET' } }));

      expect(error).toMatchObject({ reason: 'credentials_invalid', permanent: true, notProcessed: true });
      expect(fake.requests).toHaveLength(0);
    });
  });

  describe('placeCall errors', () => {
    it('a 429 (code 90103) is throttled and not processed, with the Retry-After delay', async () => {
      fake.throttleNext(2);

      const error = await dialError(dialRequest());

      expect(error).toBeInstanceOf(CarrierError);
      expect(error).toMatchObject({
        reason: 'carrier_throttled',
        throttled: true,
        notProcessed: true,
        permanent: false,
        retryAfterMs: 2000,
        carrierCode: '90103',
      });
      expect(fake.calls.size).toBe(0);
    });

    it("throttles for real past Telnyx's dial rate (30 per rolling 5 s)", async () => {
      const limited = new TelnyxFake({ dialsPerWindow: 2 });
      const base = await limited.start();
      try {
        const client = new TelnyxProvider({ carrierApiUrls: { telnyx: base } } as unknown as AppConfig);
        const request = (runId: number) => ({ ...dialRequest({ runId }), credentials: limited.credentials });
        await client.placeCall(request(1));
        await client.placeCall(request(2));

        await expect(client.placeCall(request(3))).rejects.toMatchObject({ throttled: true, notProcessed: true });
        expect(limited.calls.size).toBe(2);
      } finally {
        await limited.stop();
      }
    });

    it('a 401 is a permanent unauthorized rejection', async () => {
      fake.failNext('unauthorized');

      expect(await dialError(dialRequest())).toMatchObject({ reason: 'carrier_unauthorized', permanent: true, carrierCode: '10009' });
    });

    it('a wrong API key is rejected by Telnyx with 401 and ends the run as unauthorized', async () => {
      const error = await dialError(dialRequest({ credentials: { ...fake.credentials, api_key: 'KEYWRONG' } }));

      expect(error).toMatchObject({ reason: 'carrier_unauthorized', permanent: true, notProcessed: true });
    });

    it('a 403 is a permanent unauthorized rejection', async () => {
      fake.failNext('forbidden');

      expect(await dialError(dialRequest())).toMatchObject({ reason: 'carrier_unauthorized', permanent: true, carrierCode: '10010' });
    });

    it('a 422 "Invalid phone number" (10002) is a permanent invalid_number', async () => {
      fake.failNext('invalid_number');

      expect(await dialError(dialRequest())).toMatchObject({ reason: 'invalid_number', permanent: true, notProcessed: true, carrierCode: '10002' });
    });

    it('a destination Telnyx rejects as not +E.164 (10016) is a permanent invalid_number', async () => {
      expect(await dialError(dialRequest({ to: '4155550100' }))).toMatchObject({
        reason: 'invalid_number',
        permanent: true,
        carrierCode: '10016',
      });
    });

    it('a malformed from number is reported as such', async () => {
      expect(await dialError(dialRequest({ from: '0800 FLOWERS' }))).toMatchObject({ reason: 'invalid_from_number', permanent: true });
    });

    it('a 503 leaves the outcome open: a proxy answers it for a creation whose answer it lost, and there is no idempotency key', async () => {
      fake.failNext('unavailable');

      expect(await dialError(dialRequest())).toMatchObject({ reason: 'carrier_unavailable', permanent: false, notProcessed: false });
    });

    it('a 500 leaves the outcome open: not permanent, possibly processed', async () => {
      fake.failNext('server_error');

      expect(await dialError(dialRequest())).toMatchObject({ reason: 'carrier_error', permanent: false, notProcessed: false });
    });

    it('a connection reset after the request is an unknown outcome, and the call is then found by run', async () => {
      fake.failNext('reset');

      const error = await dialError(dialRequest());

      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(CarrierError);
      const lookup = await provider.lookupCall(reference());
      expect(lookup).toMatchObject({ kind: 'found', providerCallId: fake.callForRun(42)?.callControlId });
    });

    it('a refused connection never reached Telnyx: not processed', async () => {
      const gone = new TelnyxFake();
      const base = await gone.start();
      await gone.stop();
      const client = new TelnyxProvider({ carrierApiUrls: { telnyx: base } } as unknown as AppConfig);

      const error = await client.placeCall({ ...dialRequest(), credentials: gone.credentials }).catch((e: unknown) => e);

      expect(error).toMatchObject({ reason: 'carrier_unreachable', notProcessed: true, permanent: false });
    });
  });

  describe('checkCredentials', () => {
    it('reads the Call Control application with the Bearer key, and answers ok', async () => {
      expect(await provider.checkCredentials(fake.credentials)).toEqual({ ok: true });

      expect(fake.requests).toHaveLength(1);
      expect(fake.requests[0]).toMatchObject({ method: 'GET', path: `/v2/call_control_applications/${fake.connectionId}` });
      expect(fake.requests[0].headers.authorization).toBe(`Bearer ${fake.apiKey}`);
    });

    it('answers unauthorized for an API key Telnyx refuses (401)', async () => {
      const check = await provider.checkCredentials({ ...fake.credentials, api_key: 'KEYWRONG_0123456789' });

      expect(check).toMatchObject({ ok: false, reason: 'unauthorized', message: expect.stringContaining('401') });
    });

    it('answers connection_not_found when the key works but names no application of the account (404)', async () => {
      const check = await provider.checkCredentials({ ...fake.credentials, connection_id: '1999999999999999999' });

      expect(check).toMatchObject({ ok: false, reason: 'connection_not_found', message: expect.stringContaining('1999999999999999999') });
    });

    it('answers invalid_credentials for a bad shape, before sending anything', async () => {
      expect(await provider.checkCredentials({ api_key: 'KEY1' })).toMatchObject({ ok: false, reason: 'invalid_credentials' });
      expect(fake.requests).toHaveLength(0);
    });

    it('answers invalid_credentials, not a failure to reach Telnyx, for a stored API key with NUL', async () => {
      const check = await provider.checkCredentials({ ...fake.credentials, api_key: 'KEY\u0000SECRET' });

      expect(check).toMatchObject({ ok: false, reason: 'invalid_credentials', message: expect.stringContaining('credentials.api_key') });
      expect(fake.requests).toHaveLength(0);
    });

    it('throws when Telnyx cannot answer (5xx) or cannot be reached', async () => {
      fake.failNextApplicationRead('unavailable');
      await expect(provider.checkCredentials(fake.credentials)).rejects.toThrow(/503/);

      const gone = new TelnyxFake();
      const base = await gone.start();
      await gone.stop();
      const client = new TelnyxProvider({ carrierApiUrls: { telnyx: base } } as unknown as AppConfig);
      await expect(client.checkCredentials(gone.credentials)).rejects.toMatchObject({ reason: 'carrier_unreachable' });
    });
  });

  describe('lookupCall', () => {
    it('reports a live call as ringing', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());

      const lookup = await provider.lookupCall(reference({ providerCallId }));

      expect(lookup).toMatchObject({ kind: 'found', providerCallId });
      expect(lookup.kind === 'found' && lookup.events).toEqual([
        expect.objectContaining({ type: 'ringing', runId: 42, organizationId: 7, provider: 'telnyx', providerCallId }),
      ]);
      expect(fake.requests.at(-1)).toMatchObject({ method: 'GET', path: `/v2/calls/${providerCallId}` });
    });

    it('reports a call alive past the ring timeout as answered, no later than the timeout: Telnyx would have hung it up', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());
      fake.answerQuietly(providerCallId);
      fake.backdate(providerCallId, 90);
      const started = fake.calls.get(providerCallId)!.startTime.getTime();

      const lookup = await provider.lookupCall(reference({ providerCallId }));

      expect(lookup.kind === 'found' && lookup.events).toEqual([
        expect.objectContaining({ type: 'ringing', occurredAt: new Date(started).toISOString() }),
        expect.objectContaining({ type: 'answered', occurredAt: new Date(started + 30_000).toISOString(), providerCallId }),
      ]);
    });

    it('counts a live call within a minute of its start as ringing, answered or not: only its own event can tell', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());
      fake.answerQuietly(providerCallId);
      fake.backdate(providerCallId, 45);

      const lookup = await provider.lookupCall(reference({ providerCallId }));

      expect(lookup.kind === 'found' && lookup.events.map((event) => event.type)).toEqual(['ringing']);
    });

    it('finds a call nobody answered ended at the ring timeout the dial asked for', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());
      expect(fake.dialRequests()[0].body).toMatchObject({ timeout_secs: 30 });
      fake.backdate(providerCallId, 31);

      expect(await provider.lookupCall(reference({ providerCallId }))).toEqual({ kind: 'found', providerCallId, events: [] });
      expect(fake.calls.get(providerCallId)).toMatchObject({ isAlive: false });
    });

    it('finds an ended call but reports no event: Telnyx does not say how it ended', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());
      await provider.hangup(reference({ providerCallId }));

      expect(await provider.lookupCall(reference({ providerCallId }))).toEqual({ kind: 'found', providerCallId, events: [] });
    });

    it('is unknown once Telnyx has forgotten the call (404)', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());
      fake.forget(providerCallId);

      expect(await provider.lookupCall(reference({ providerCallId }))).toEqual({ kind: 'unknown' });
    });

    it('without a call id, finds the live call by client_state among the active calls', async () => {
      await provider.placeCall(dialRequest({ runId: 41, callbacks: callbackUrlsFor(PUBLIC_BASE, 'telnyx', 41) }));
      const { providerCallId } = await provider.placeCall(dialRequest());

      const lookup = await provider.lookupCall(reference());

      expect(lookup).toMatchObject({ kind: 'found', providerCallId, events: [expect.objectContaining({ type: 'ringing' })] });
      expect(fake.requests.at(-1)?.path).toBe(`/v2/connections/${fake.connectionId}/active_calls`);
    });

    it('without a call id, reports a call found among the active calls past the ring timeout as answered', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());
      fake.answerQuietly(providerCallId);
      fake.backdate(providerCallId, 90);

      const lookup = await provider.lookupCall(reference());

      expect(lookup.kind === 'found' && lookup.events.map((event) => event.type)).toEqual(['ringing', 'answered']);
    });

    it('follows the active-calls cursor past the first page', async () => {
      const busy = new TelnyxFake({ dialsPerWindow: Infinity });
      const base = await busy.start();
      try {
        const client = new TelnyxProvider({ carrierApiUrls: { telnyx: base } } as unknown as AppConfig);
        for (let runId = 1; runId <= 260; runId++) {
          await client.placeCall({ ...dialRequest({ runId }), credentials: busy.credentials });
        }

        const lookup = await client.lookupCall({ ...reference({ runId: 260 }), credentials: busy.credentials });

        expect(lookup).toMatchObject({ kind: 'found', providerCallId: busy.callForRun(260)?.callControlId });
        expect(busy.requests.filter((r) => r.path.endsWith('/active_calls'))).toHaveLength(2);
      } finally {
        await busy.stop();
      }
    });

    it('without a call id and no active call, cannot tell: unknown, never not_found', async () => {
      expect(await provider.lookupCall(reference())).toEqual({ kind: 'unknown' });
    });
  });

  describe('hangup', () => {
    it('hangs up a live call with POST /v2/calls/{id}/actions/hangup', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());

      expect(await provider.hangup(reference({ providerCallId }))).toBe(true);

      expect(fake.requests.at(-1)).toMatchObject({ method: 'POST', path: `/v2/calls/${providerCallId}/actions/hangup` });
      expect(fake.calls.get(providerCallId)).toMatchObject({ isAlive: false, hungUpByApi: true });
    });

    it('cannot hang up a call that already ended, and does not try', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());
      await provider.hangup(reference({ providerCallId }));

      expect(await provider.hangup(reference({ providerCallId }))).toBe(false);
      expect(fake.requests.filter((request) => request.path.endsWith('/actions/hangup'))).toHaveLength(1);
    });

    it('leaves alone a call alive past the ring timeout: it was answered, and a hang-up would end the conversation', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());
      fake.answerQuietly(providerCallId);
      fake.backdate(providerCallId, 90);

      expect(await provider.hangup(reference({ providerCallId }))).toBe(false);
      expect(await provider.hangup(reference())).toBe(false);
      expect(fake.requests.filter((request) => request.path.endsWith('/actions/hangup'))).toHaveLength(0);
      expect(fake.calls.get(providerCallId)).toMatchObject({ isAlive: true });
    });

    it('cannot hang up a call Telnyx does not know (404)', async () => {
      expect(await provider.hangup(reference({ providerCallId: 'v3:unknown' }))).toBe(false);
    });

    it('without a call id, hangs up the call found by run', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());

      expect(await provider.hangup(reference())).toBe(true);
      expect(fake.calls.get(providerCallId)?.isAlive).toBe(false);
    });
  });

  describe('endCall', () => {
    it('ends an answered call whatever its age (an answering machine to hang up on)', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());
      fake.answerQuietly(providerCallId);
      fake.backdate(providerCallId, 90);

      expect(await provider.endCall(reference({ providerCallId }))).toBe(true);
      expect(fake.requests.at(-1)).toMatchObject({ method: 'POST', path: `/v2/calls/${providerCallId}/actions/hangup` });
      expect(fake.calls.get(providerCallId)).toMatchObject({ isAlive: false, hungUpByApi: true });
    });

    it('without a call id, ends the call found by run', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());

      expect(await provider.endCall(reference())).toBe(true);
      expect(fake.calls.get(providerCallId)?.isAlive).toBe(false);
    });

    it('cannot end a call that already ended (422 90018)', async () => {
      const { providerCallId } = await provider.placeCall(dialRequest());
      await provider.endCall(reference({ providerCallId }));

      expect(await provider.endCall(reference({ providerCallId }))).toBe(false);
    });
  });

  describe('recordings and artifacts', () => {
    it('downloads a pre-signed recording link without sending the API key', async () => {
      const audio = Buffer.from('RIFF....WAVEfmt fake audio');
      const url = fake.addRecording(audio, 'audio/wav');

      const recording = await provider.fetchRecording(url);

      expect(recording).toEqual({ contentType: 'audio/wav', body: audio });
      expect(fake.requests.at(-1)?.headers.authorization).toBeUndefined();
    });

    it('never fetches a recording from a host that is neither Telnyx nor its storage', async () => {
      expect(await downloadElsewhere((url) => provider.fetchRecording(url))).toEqual({ authorizations: [], refused: true });
      await expect(provider.fetchRecording('http://169.254.169.254/latest/meta-data/')).rejects.toThrow(/Refusing/);
    });

    it('takes S3 only for storage, not every host under amazonaws.com', async () => {
      // Anyone can run an endpoint under amazonaws.com (API Gateway, an instance); refused before any connection.
      for (const host of ['abc123defg.execute-api.us-east-1.amazonaws.com', 'ec2-203-0-113-9.compute-1.amazonaws.com', 'evil-telnyx.com']) {
        await expect(provider.fetchRecording(`https://${host}/r.wav`)).rejects.toThrow(/Refusing to fetch a recording from https:\/\/.*not a Telnyx storage host/);
      }
    });

    it('follows a redirect only to Telnyx or its storage', async () => {
      const audio = Buffer.from('RIFF....WAVEfmt moved audio');
      expect(await provider.fetchRecording(fake.redirectTo(fake.addRecording(audio, 'audio/wav')))).toEqual({ contentType: 'audio/wav', body: audio });

      expect(await downloadElsewhere((url) => provider.fetchRecording(url), (elsewhere) => fake.redirectTo(elsewhere))).toEqual({ authorizations: [], refused: true });
      await expect(provider.fetchRecording(fake.redirectTo('https://abc123defg.execute-api.us-east-1.amazonaws.com/r.wav'))).rejects.toThrow(
        /refused to follow a redirect to https:\/\/abc123defg\.execute-api/,
      );
    });

    it('says so when the link has expired', async () => {
      const url = fake.addRecording(Buffer.from('x'), 'audio/wav', -1);

      await expect(provider.fetchRecording(url)).rejects.toThrow(/403.*expired/);
    });

    it('refuses anything but an http(s) link', async () => {
      await expect(provider.fetchRecording('file:///etc/passwd')).rejects.toThrow(/Refusing to fetch a recording/);
      // A refusal, which trying again would meet again: the run is finished without the recording at once.
      await expect(provider.fetchRecording('file:///etc/passwd')).rejects.toMatchObject({ name: 'DownloadRefused' });
    });

    it('leaves transcripts to the agent runtime and recordings to fetchRecording', async () => {
      expect(await provider.collectArtifacts()).toEqual({ transcript: [], recording: null });
    });

    it('has no answer instructions to give: Call Control streams from the dial', () => {
      expect(provider.answerInstructions()).toEqual({ contentType: 'application/json', body: '{}' });
    });
  });
  describe('a call through its webhooks', () => {
    let server: Server;
    let receiverBase = '';
    const received: { status: number; parsed?: ParsedWebhook }[] = [];

    beforeAll(async () => {
      // Our side: verify with the configuration's public key, then parse.
      server = createServer((request, response) => {
        const chunks: Buffer[] = [];
        request.on('data', (chunk: Buffer) => chunks.push(chunk));
        request.on('end', () => {
          const webhook = {
            method: request.method ?? 'POST',
            url: `${receiverBase}${request.url}`,
            headers: request.headers as Record<string, string>,
            rawBody: Buffer.concat(chunks),
          };
          try {
            provider.verifyWebhook(webhook, fake.credentials, Date.now());
          } catch (error) {
            const status = error instanceof WebhookRejected ? error.status : 500;
            received.push({ status });
            return void response.writeHead(status).end();
          }
          received.push({ status: 200, parsed: provider.parseWebhook('status', webhook) });
          response.writeHead(200).end();
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      receiverBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
    beforeEach(() => {
      received.length = 0;
    });

    function localDial(settings: Record<string, unknown> = {}): TelnyxPlaceCallRequest {
      return dialRequest({ settings, callbacks: callbackUrlsFor(receiverBase, 'telnyx', 42) });
    }

    it('reports ringing, answer, machine verdict, hang-up, recording and cost as signed events', async () => {
      const { providerCallId } = await provider.placeCall(localDial({ answering_machine_detection: true, record: true }));

      for (const event of [
        'call.initiated',
        'call.answered',
        'call.machine.premium.detection.ended',
        'call.hangup',
        'call.recording.saved',
        'call.cost',
      ]) {
        expect((await fake.sendCallEvent(providerCallId, event, event.includes('detection') ? { result: 'machine' } : {})).status).toBe(200);
      }

      expect(received.map((webhook) => webhook.parsed?.providerCallId)).toEqual(Array(6).fill(providerCallId));
      expect(received.map((webhook) => webhook.parsed?.events[0])).toEqual([
        expect.objectContaining({ type: 'ringing' }),
        expect.objectContaining({ type: 'answered' }),
        expect.objectContaining({ type: 'answered', answeredBy: 'machine' }),
        expect.objectContaining({ type: 'completed' }),
        expect.objectContaining({ type: 'recording', recordingUrl: expect.stringContaining('X-Amz-Signature=') }),
        expect.objectContaining({ type: 'cost', cost: { amount: 0.007, currency: 'USD' }, billedSeconds: 60 }),
      ]);
      const recording = await provider.fetchRecording(received[4].parsed!.events[0].recordingUrl!);
      expect(recording.contentType).toBe('audio/wav');
      expect(recording.body.subarray(0, 4).toString()).toBe('RIFF');
    });

    it('after our hang-up of a ringing call, Telnyx reports it canceled', async () => {
      const { providerCallId } = await provider.placeCall(localDial());

      await provider.hangup(reference({ providerCallId }));

      await waitFor(async () => (received.length > 0 ? true : undefined), { what: "Telnyx's webhook of the canceled call" });
      expect(received).toEqual([{ status: 200, parsed: { providerCallId, runId: 42, events: [expect.objectContaining({ type: 'canceled' })] } }]);
    });

    it('a replayed webhook is refused with 403, an unsigned one with 401', async () => {
      const { providerCallId } = await provider.placeCall(localDial());
      const url = `${receiverBase}/api/v1/telephony/telnyx/status/42`;
      const old = fake.signedRequest(url, fake.callEvent(providerCallId, 'call.answered'), { timestampSeconds: Math.floor(Date.now() / 1000) - 600 });

      expect((await fake.deliver(old)).status).toBe(403);
      const { 'telnyx-signature-ed25519': _signature, ...unsigned } = old.headers;
      expect((await fake.deliver({ ...old, headers: unsigned })).status).toBe(401);
    });
  });
});
