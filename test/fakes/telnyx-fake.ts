import { createHmac, generateKeyPairSync, KeyObject, randomBytes, randomUUID, sign } from 'node:crypto';
import { IncomingMessage, ServerResponse } from 'node:http';
import { DeliveryResult, JsonLoopbackFake, RecordedJsonRequest, sendJson, SignedWebhook } from './json-loopback-fake';
import { silentWav } from './silent-wav';

/**
 * A loopback stand-in for the Telnyx Call Control v2 API, for tests. It
 * checks requests the way Telnyx documents them (Bearer API key, JSON body,
 * required and enumerated dial parameters, +E.164 numbers), answers in
 * Telnyx's shapes (`{ data }` / `{ errors: [{ code, title, detail, source }] }`),
 * keeps the calls it placed so look-ups, active-call listings and hang-ups
 * behave, answers reads of its one Call Control application (what a
 * credentials check asks), serves recordings behind pre-signed links like Telnyx's storage,
 * and sends webhooks signed with its own Ed25519 key — only ever to loopback
 * addresses.
 *
 * Assumptions where the documentation is silent: a repeated `command_id`
 * answers the first dial again without a second call; dials are limited to
 * 30 per rolling 5 s (429, code 90103), as Telnyx states for Call Control.
 */
export class TelnyxFake extends JsonLoopbackFake {
  readonly apiKey: string;
  readonly connectionId: string;
  /** Base64 of the raw 32-byte Ed25519 public key, as the Telnyx portal shows it. */
  readonly publicKey: string;
  /** Every request the fake received, in order. */
  readonly requests: RecordedRequest[] = [];
  /** The calls it placed, by call_control_id. */
  readonly calls = new Map<string, TelnyxFakeCall>();
  /** Webhooks the fake sent on its own (after a hang-up), with what the receiver answered. */
  readonly deliveries: { url: string; eventType: string; status: number | null; error?: string }[] = [];

  private readonly privateKey: KeyObject;
  private readonly storageKey = randomBytes(32);
  private readonly recordings = new Map<string, { body: Buffer; contentType: string; expiresAt: number }>();
  private readonly failures: { kind: TelnyxFailure; retryAfterSeconds?: number }[] = [];
  private readonly applicationFailures: TelnyxReadFailure[] = [];
  private readonly statusFailures: TelnyxReadFailure[] = [];
  private readonly dialTimes: number[] = [];

  constructor(private readonly options: TelnyxFakeOptions = {}) {
    super('TelnyxFake');
    this.apiKey = options.apiKey ?? `KEY${randomBytes(16).toString('hex').toUpperCase()}_${randomBytes(8).toString('hex')}`;
    this.connectionId = options.connectionId ?? String(1_000_000_000_000_000_000n + BigInt(randomBytes(6).readUIntBE(0, 6)));
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    this.privateKey = privateKey;
    this.publicKey = (publicKey.export({ format: 'der', type: 'spki' }) as Buffer).subarray(-32).toString('base64');
  }

  /** The credentials a telephony configuration needs to use this fake. */
  get credentials(): { api_key: string; connection_id: string; public_key: string } {
    return { api_key: this.apiKey, connection_id: this.connectionId, public_key: this.publicKey };
  }

  /** Forgets requests, calls, pending failures and recordings. */
  reset(): void {
    this.requests.length = 0;
    this.calls.clear();
    this.deliveries.length = 0;
    this.failures.length = 0;
    this.applicationFailures.length = 0;
    this.statusFailures.length = 0;
    this.dialTimes.length = 0;
    this.recordings.clear();
  }

  /** The next dial answers 429 with Telnyx's dial-rate code 90103 and a Retry-After. */
  throttleNext(retryAfterSeconds = 1): void {
    this.failures.push({ kind: 'throttle', retryAfterSeconds });
  }

  /** The next dial fails this way (`reset` places the call, then drops the connection without answering). */
  failNext(kind: TelnyxFailure): void {
    this.failures.push({ kind });
  }

  /** The next call-status read (`GET /v2/calls/{id}`) fails this way. */
  failNextStatusRead(kind: TelnyxReadFailure): void {
    this.statusFailures.push(kind);
  }

  /** The next read of the Call Control application (what a credentials check asks) fails this way. */
  failNextApplicationRead(kind: TelnyxReadFailure): void {
    this.applicationFailures.push(kind);
  }

  /** The `POST /v2/calls` requests received. */
  dialRequests(): RecordedRequest[] {
    return this.requests.filter((request) => request.method === 'POST' && request.path === '/v2/calls');
  }

  /** The call placed for a run, found by the `client_state` Telnyx echoes (base64 of the run id). */
  callForRun(runId: number): TelnyxFakeCall | undefined {
    const state = Buffer.from(String(runId)).toString('base64');
    return [...this.calls.values()].find((call) => call.clientState === state);
  }

  /** Makes Telnyx forget a call, as it does 10 minutes after the call ended (look-ups then answer 404). */
  forget(callControlId: string): void {
    this.calls.delete(callControlId);
  }

  /** Moves a call's start (and answer) back in time, as if it had been placed `seconds` earlier. */
  backdate(callControlId: string, seconds: number): void {
    const call = this.requireCall(callControlId);
    call.startTime = new Date(call.startTime.getTime() - seconds * 1000);
    if (call.answeredAt) call.answeredAt = new Date(call.answeredAt.getTime() - seconds * 1000);
  }

  /** Answers a call without telling anyone: its `call.answered` webhook is lost on the way. */
  answerQuietly(callControlId: string): void {
    this.requireCall(callControlId).answeredAt = new Date();
  }

  /** Stores a recording and returns a pre-signed link to it, valid `expiresInSeconds`. */
  addRecording(body: Buffer = silentWav(1), contentType = 'audio/wav', expiresInSeconds = 600): string {
    const key = `${randomUUID()}/${randomUUID()}-${Math.floor(Date.now() / 1000)}.${contentType === 'audio/mpeg' ? 'mp3' : 'wav'}`;
    const expiresAt = Date.now() + expiresInSeconds * 1000;
    this.recordings.set(key, { body, contentType, expiresAt });
    const date = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '');
    const query = new URLSearchParams({
      'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
      'X-Amz-Date': date,
      'X-Amz-Expires': String(expiresInSeconds),
      'X-Amz-SignedHeaders': 'host',
      'X-Amz-Signature': this.storageSignature(key, expiresAt),
    });
    return `${this.url}/telephony-recorder-prod/${key}?${query}`;
  }

  /** A webhook envelope as Telnyx sends it: `{ data: { record_type, event_type, id, occurred_at, payload }, meta }`. */
  event(eventType: string, payload: Record<string, unknown>, occurredAt = new Date()): TelnyxWebhookBody {
    return {
      data: { record_type: 'event', event_type: eventType, id: randomUUID(), occurred_at: occurredAt.toISOString(), payload },
      meta: { attempt: 1, delivered_to: '' },
    };
  }

  /**
   * The webhook Telnyx would send for one of its calls, with the call's ids
   * and client_state and the fields documented for that event type; `extra`
   * overrides or adds payload fields.
   */
  callEvent(callControlId: string, eventType: string, extra: Record<string, unknown> = {}, occurredAt = new Date()): TelnyxWebhookBody {
    const call = this.requireCall(callControlId);
    const payload: Record<string, unknown> = {
      call_control_id: call.callControlId,
      call_leg_id: call.callLegId,
      call_session_id: call.callSessionId,
      client_state: call.clientState,
      connection_id: call.connectionId,
      from: call.from,
      to: call.to,
      ...eventDefaults(eventType, call, () => this.addRecording()),
      ...extra,
    };
    return this.event(eventType, payload, occurredAt);
  }

  /**
   * Sends a call's webhook to its `webhook_url` and moves the call's state
   * (answered, hung up) the way the event says.
   */
  async sendCallEvent(callControlId: string, eventType: string, extra: Record<string, unknown> = {}): Promise<DeliveryResult> {
    const call = this.requireCall(callControlId);
    if (!call.webhookUrl) throw new Error(`Call ${callControlId} was dialed without a webhook_url`);
    const now = new Date();
    if (eventType === 'call.answered') call.answeredAt = now;
    if (eventType === 'call.hangup') this.end(call, now);
    return this.sendEvent(call.webhookUrl, this.callEvent(callControlId, eventType, extra, now));
  }

  /** Signs a body (object → JSON) for `url` the way Telnyx does; nothing is sent. */
  signedRequest(url: string, body: string | object, options: { timestampSeconds?: number } = {}): SignedWebhook {
    const timestamp = String(options.timestampSeconds ?? Math.floor(Date.now() / 1000));
    return this.signedJson(url, body, (rawBody) => ({
      'user-agent': 'telnyx-webhooks',
      'telnyx-timestamp': timestamp,
      'telnyx-signature-ed25519': sign(null, Buffer.concat([Buffer.from(`${timestamp}|`), rawBody]), this.privateKey).toString('base64'),
    }));
  }

  /** Signs and POSTs a webhook body to `url` (loopback only). */
  async sendEvent(url: string, event: string | object): Promise<DeliveryResult> {
    const body = typeof event === 'object' && event !== null && 'meta' in event
      ? { ...(event as TelnyxWebhookBody), meta: { ...(event as TelnyxWebhookBody).meta, delivered_to: url } }
      : event;
    return this.deliver(this.signedRequest(url, body));
  }

  protected async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const { url, recorded } = await this.readJsonRequest(request);
    this.requests.push(recorded);

    if (recorded.method === 'GET' && url.pathname.startsWith('/telephony-recorder-prod/')) {
      return this.serveRecording(request, url, response);
    }
    if (!url.pathname.startsWith('/v2/')) return sendErrors(response, 404, [{ code: '10005', title: 'Resource not found' }]);
    if (request.headers.authorization !== `Bearer ${this.apiKey}`) {
      return sendErrors(response, 401, [
        { code: '10009', title: 'Authentication failed', detail: 'The required authentication headers were either invalid or not included in the request.' },
      ]);
    }

    this.endUnansweredPastTimeout();
    const callMatch = /^\/v2\/calls\/([^/]+)(\/actions\/hangup)?$/.exec(url.pathname);
    const applicationMatch = /^\/v2\/call_control_applications\/([^/]+)$/.exec(url.pathname);
    const activeMatch = /^\/v2\/connections\/([^/]+)\/active_calls$/.exec(url.pathname);
    if (recorded.method === 'POST' && url.pathname === '/v2/calls') return this.dial(request, recorded, response);
    if (callMatch && recorded.method === 'GET' && !callMatch[2]) return this.status(decodeURIComponent(callMatch[1]), response);
    if (callMatch && recorded.method === 'POST' && callMatch[2]) return this.hangup(decodeURIComponent(callMatch[1]), recorded, response);
    if (activeMatch && recorded.method === 'GET') return this.activeCalls(decodeURIComponent(activeMatch[1]), url, response);
    if (applicationMatch && recorded.method === 'GET') return this.application(decodeURIComponent(applicationMatch[1]), response);
    return sendErrors(response, 404, [{ code: '10005', title: 'Resource not found', detail: `${recorded.method} ${url.pathname}` }]);
  }

  private dial(request: IncomingMessage, recorded: RecordedRequest, response: ServerResponse): void {
    const failure = this.failures.shift();
    if (failure?.kind === 'throttle') return this.throttled(response, failure.retryAfterSeconds ?? 1);
    if (failure?.kind === 'unauthorized') {
      return sendErrors(response, 401, [{ code: '10009', title: 'Authentication failed', detail: 'The API key is invalid.' }]);
    }
    if (failure?.kind === 'forbidden') {
      return sendErrors(response, 403, [{ code: '10010', title: 'Authorization failed', detail: 'You do not have permission to perform the requested action.' }]);
    }
    if (failure?.kind === 'server_error') return sendErrors(response, 500, [{ code: '10007', title: 'Unexpected error', detail: 'An unexpected error occured.' }]);
    if (failure?.kind === 'unavailable') return sendErrors(response, 503, [{ code: '10007', title: 'Service unavailable' }]);

    if (!String(request.headers['content-type'] ?? '').startsWith('application/json')) {
      return sendErrors(response, 415, [{ code: '10014', title: 'Unsupported Media Type', detail: 'The request body must be JSON.' }]);
    }
    const body = recorded.body;
    if (!body || typeof body !== 'object' || Array.isArray(body)) {
      return sendErrors(response, 422, [{ code: '10015', title: 'Bad Request', detail: 'The request failed because it was not well-formed.' }]);
    }
    const problems = dialProblems(body as Record<string, unknown>, this.connectionId);
    if (problems.length) return sendErrors(response, 422, problems);
    if (failure?.kind === 'invalid_number') {
      return sendErrors(response, 422, [
        { code: '10002', title: 'Invalid phone number', detail: 'The phone number is invalid.', source: { pointer: '/to' } },
      ]);
    }

    const dial = body as Record<string, unknown>;
    const repeated = typeof dial.command_id === 'string'
      ? [...this.calls.values()].find((call) => call.commandId === dial.command_id)
      : undefined;
    if (repeated) return sendJson(response, 200, { data: this.dialAnswer(repeated) });

    const now = Date.now();
    while (this.dialTimes.length && this.dialTimes[0] <= now - (this.options.dialWindowMs ?? 5000)) this.dialTimes.shift();
    if (this.dialTimes.length >= (this.options.dialsPerWindow ?? 30)) return this.throttled(response, 1);
    this.dialTimes.push(now);

    const call: TelnyxFakeCall = {
      callControlId: `v3:${randomBytes(27).toString('base64url')}`,
      callLegId: randomUUID(),
      callSessionId: randomUUID(),
      connectionId: String(dial.connection_id),
      to: String(dial.to),
      from: String(dial.from),
      clientState: typeof dial.client_state === 'string' ? dial.client_state : null,
      webhookUrl: typeof dial.webhook_url === 'string' ? dial.webhook_url : null,
      commandId: typeof dial.command_id === 'string' ? dial.command_id : undefined,
      dial,
      isAlive: true,
      startTime: new Date(now),
      recordingId: dial.record === 'record-from-answer' ? randomUUID() : undefined,
    };
    this.calls.set(call.callControlId, call);
    if (failure?.kind === 'reset') {
      // The call exists at the carrier, but its answer never arrives.
      request.socket.destroy();
      return;
    }
    sendJson(response, 200, { data: this.dialAnswer(call) });
  }

  private dialAnswer(call: TelnyxFakeCall): Record<string, unknown> {
    return {
      call_control_id: call.callControlId,
      call_leg_id: call.callLegId,
      call_session_id: call.callSessionId,
      is_alive: false,
      record_type: 'call',
      ...(call.clientState ? { client_state: call.clientState } : {}),
      ...(call.recordingId ? { recording_id: call.recordingId } : {}),
    };
  }

  private throttled(response: ServerResponse, retryAfterSeconds: number): void {
    sendErrors(response, 429, [{ code: '90103', title: 'Too many requests', detail: 'Dial rate limit exceeded.' }], {
      'retry-after': String(retryAfterSeconds),
    });
  }

  private status(callControlId: string, response: ServerResponse): void {
    const failure = this.statusFailures.shift();
    if (failure) return sendReadFailure(response, failure);
    const call = this.calls.get(callControlId);
    // Telnyx keeps a call's status for 10 minutes after it ended.
    if (!call || (call.endTime && Date.now() - call.endTime.getTime() > 10 * 60 * 1000)) {
      return sendErrors(response, 404, [{ code: '10005', title: 'Resource not found', detail: 'Call not found.' }]);
    }
    const end = call.endTime ?? new Date();
    sendJson(response, 200, {
      data: {
        call_control_id: call.callControlId,
        call_leg_id: call.callLegId,
        call_session_id: call.callSessionId,
        client_state: call.clientState,
        is_alive: call.isAlive,
        record_type: 'call',
        call_duration: Math.round((end.getTime() - call.startTime.getTime()) / 1000),
        start_time: call.startTime.toISOString(),
        ...(call.endTime ? { end_time: call.endTime.toISOString() } : {}),
      },
    });
  }

  private hangup(callControlId: string, recorded: RecordedRequest, response: ServerResponse): void {
    const call = this.calls.get(callControlId);
    if (!call) return sendErrors(response, 404, [{ code: '10005', title: 'Resource not found', detail: 'Call not found.' }]);
    if (!call.isAlive) {
      return sendErrors(response, 422, [{ code: '90018', title: 'Call has already ended', detail: 'This call is no longer active and can\'t receive commands.' }]);
    }
    if (recorded.rawBody && (recorded.body === null || typeof recorded.body !== 'object')) {
      return sendErrors(response, 422, [{ code: '10015', title: 'Bad Request', detail: 'The request failed because it was not well-formed.' }]);
    }
    const answered = Boolean(call.answeredAt);
    this.end(call, new Date());
    call.hungUpByApi = true;
    sendJson(response, 200, { data: { result: 'ok' } });
    // Telnyx then reports the hang-up to the call's webhook_url.
    this.reportHangup(call, {
      hangup_cause: answered ? 'normal_clearing' : 'originator_cancel',
      hangup_source: 'caller',
      sip_hangup_cause: answered ? '200' : '487',
    });
  }

  /**
   * Telnyx hangs up a call nobody answered within the dial's `timeout_secs`
   * (30 by default) and reports `hangup_cause: timeout`. The fake does it
   * when it is next asked anything, with the end time the timeout gives.
   */
  private endUnansweredPastTimeout(): void {
    const now = Date.now();
    for (const call of this.calls.values()) {
      if (!call.isAlive || call.answeredAt) continue;
      const timeoutMs = (typeof call.dial.timeout_secs === 'number' ? call.dial.timeout_secs : 30) * 1000;
      if (now - call.startTime.getTime() < timeoutMs) continue;
      this.end(call, new Date(call.startTime.getTime() + timeoutMs));
      this.reportHangup(call, { hangup_cause: 'timeout', hangup_source: 'callee', sip_hangup_cause: '480' });
    }
  }

  private reportHangup(call: TelnyxFakeCall, fields: Record<string, unknown>): void {
    if (!call.webhookUrl || this.options.autoWebhooks === false) return;
    const event = this.callEvent(call.callControlId, 'call.hangup', fields);
    const url = call.webhookUrl;
    setImmediate(() => {
      this.sendEvent(url, event).then(
        (result) => this.deliveries.push({ url, eventType: 'call.hangup', status: result.status }),
        (error: Error) => this.deliveries.push({ url, eventType: 'call.hangup', status: null, error: error.message }),
      );
    });
  }

  private activeCalls(connectionId: string, url: URL, response: ServerResponse): void {
    if (connectionId !== this.connectionId) {
      return sendErrors(response, 422, [{ code: '10005', title: 'Resource not found', detail: 'Connection not found.' }]);
    }
    const size = Math.min(250, Math.max(1, Number(url.searchParams.get('page[size]') ?? 20) || 20));
    const after = url.searchParams.get('page[after]');
    const start = after ? Number(Buffer.from(after, 'base64url').toString('utf8')) || 0 : 0;
    const active = [...this.calls.values()].filter((call) => call.isAlive && call.connectionId === connectionId);
    const page = active.slice(start, start + size);
    const next = start + size < active.length ? Buffer.from(String(start + size)).toString('base64url') : null;
    sendJson(response, 200, {
      data: page.map((call) => ({
        call_control_id: call.callControlId,
        call_leg_id: call.callLegId,
        call_session_id: call.callSessionId,
        client_state: call.clientState,
        call_duration: Math.round((Date.now() - call.startTime.getTime()) / 1000),
        record_type: 'call',
      })),
      meta: {
        cursors: { after: next, before: start ? Buffer.from(String(Math.max(0, start - size))).toString('base64url') : null },
        total_items: active.length,
        ...(next ? { next: `/v2/connections/${connectionId}/active_calls?page[after]=${next}` } : {}),
      },
    });
  }

  /** `GET /v2/call_control_applications/{id}`: the account's one Call Control application, 404 for any other id. */
  private application(id: string, response: ServerResponse): void {
    const failure = this.applicationFailures.shift();
    if (failure) return sendReadFailure(response, failure);
    if (id !== this.connectionId) {
      return sendErrors(response, 404, [{ code: '10005', title: 'Resource not found', detail: 'The requested resource or URL could not be found.' }]);
    }
    sendJson(response, 200, {
      data: {
        record_type: 'call_control_application',
        id: this.connectionId,
        application_name: 'Voice agent calls',
        active: true,
        anchorsite_override: 'Latency',
        dtmf_type: 'RFC 2833',
        first_command_timeout: false,
        first_command_timeout_secs: 30,
        webhook_api_version: '2',
        webhook_event_url: 'https://calls.example.com/telnyx',
        webhook_event_failover_url: '',
        webhook_timeout_secs: null,
        created_at: '2025-01-01T00:00:00.000Z',
        updated_at: '2025-01-01T00:00:00.000Z',
      },
    });
  }

  private serveRecording(request: IncomingMessage, url: URL, response: ServerResponse): void {
    const key = decodeURIComponent(url.pathname.slice('/telephony-recorder-prod/'.length));
    const recording = this.recordings.get(key);
    if (request.headers.authorization) {
      // Pre-signed storage refuses a second credential.
      return sendXml(response, 400, 'InvalidArgument', 'Only one auth mechanism allowed');
    }
    if (!recording || url.searchParams.get('X-Amz-Signature') !== this.storageSignature(key, recording.expiresAt)) {
      return sendXml(response, 403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided.');
    }
    if (Date.now() > recording.expiresAt) return sendXml(response, 403, 'AccessDenied', 'Request has expired');
    response.writeHead(200, { 'content-type': recording.contentType, 'content-length': recording.body.length });
    response.end(recording.body);
  }

  private storageSignature(key: string, expiresAt: number): string {
    return createHmac('sha256', this.storageKey).update(`${key}\n${expiresAt}`).digest('hex');
  }

  private end(call: TelnyxFakeCall, at: Date): void {
    call.isAlive = false;
    call.endTime ??= at;
  }

  private requireCall(callControlId: string): TelnyxFakeCall {
    const call = this.calls.get(callControlId);
    if (!call) throw new Error(`TelnyxFake placed no call ${callControlId}`);
    return call;
  }
}

export interface TelnyxFakeOptions {
  apiKey?: string;
  connectionId?: string;
  /** Dial rate limit: at most `dialsPerWindow` dials per rolling `dialWindowMs` (Telnyx: 30 per 5 s). */
  dialsPerWindow?: number;
  dialWindowMs?: number;
  /** Send `call.hangup` to the call's webhook_url after a hang-up request (default true). */
  autoWebhooks?: boolean;
}

export type TelnyxFailure = 'throttle' | 'unauthorized' | 'forbidden' | 'invalid_number' | 'server_error' | 'unavailable' | 'reset';

/** How a read of an account resource can fail: 500 (code 10007), 503, or 429 (too many requests). */
export type TelnyxReadFailure = 'server_error' | 'unavailable' | 'throttle';

export interface TelnyxFakeCall {
  callControlId: string;
  callLegId: string;
  callSessionId: string;
  connectionId: string;
  to: string;
  from: string;
  clientState: string | null;
  webhookUrl: string | null;
  commandId?: string;
  /** The dial body as received. */
  dial: Record<string, unknown>;
  isAlive: boolean;
  startTime: Date;
  answeredAt?: Date;
  endTime?: Date;
  hungUpByApi?: boolean;
  recordingId?: string;
}

export type RecordedRequest = RecordedJsonRequest;

export interface TelnyxWebhookBody {
  data: { record_type: 'event'; event_type: string; id: string; occurred_at: string; payload: Record<string, unknown> };
  meta: { attempt: number; delivered_to: string };
}


interface FakeError {
  code: string;
  title: string;
  detail?: string;
  source?: { pointer: string };
}

const E164 = /^\+[1-9]\d{6,14}$/;
const ENUMS: Record<string, string[]> = {
  webhook_url_method: ['POST', 'GET'],
  answering_machine_detection: ['premium', 'detect', 'detect_beep', 'detect_words', 'greeting_end', 'disabled'],
  record: ['record-from-answer'],
  record_format: ['wav', 'mp3'],
  record_channels: ['single', 'dual'],
  stream_track: ['inbound_track', 'outbound_track', 'both_tracks'],
  stream_codec: ['PCMU', 'PCMA', 'G722', 'OPUS', 'AMR-WB', 'L16', 'default'],
  stream_bidirectional_mode: ['mp3', 'rtp'],
  stream_bidirectional_codec: ['PCMU', 'PCMA', 'G722', 'OPUS', 'AMR-WB', 'L16'],
};

function dialProblems(body: Record<string, unknown>, connectionId: string): FakeError[] {
  const problems: FakeError[] = [];
  for (const field of ['connection_id', 'to', 'from']) {
    if (typeof body[field] !== 'string' || !body[field]) {
      problems.push({ code: '10004', title: 'Missing required parameter', detail: `The '${field}' parameter is required.`, source: { pointer: `/${field}` } });
    }
  }
  if (typeof body.connection_id === 'string' && body.connection_id && body.connection_id !== connectionId) {
    problems.push({ code: '10005', title: 'Resource not found', detail: 'The connection_id does not exist.', source: { pointer: '/connection_id' } });
  }
  for (const field of ['to', 'from']) {
    if (typeof body[field] === 'string' && body[field] && !E164.test(body[field] as string)) {
      problems.push({ code: '10016', title: 'Phone number must be in +E.164 format', detail: `The '${field}' number must be in +E.164 format.`, source: { pointer: `/${field}` } });
    }
  }
  if (body.webhook_url !== undefined && !isUrl(body.webhook_url, ['http:', 'https:'])) {
    problems.push({ code: '10003', title: 'Invalid URL', detail: 'The URL provided was invalid.', source: { pointer: '/webhook_url' } });
  }
  if (body.stream_url !== undefined && !isUrl(body.stream_url, ['ws:', 'wss:'])) {
    problems.push({ code: '10003', title: 'Invalid URL', detail: 'stream_url must be a WebSocket URL.', source: { pointer: '/stream_url' } });
  }
  if (typeof body.stream_auth_token === 'string' && body.stream_auth_token.length > 4000) {
    problems.push({ code: '10015', title: 'Bad Request', detail: 'stream_auth_token is longer than 4000 characters.', source: { pointer: '/stream_auth_token' } });
  }
  if (body.client_state !== undefined && (typeof body.client_state !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(body.client_state))) {
    problems.push({ code: '10015', title: 'Bad Request', detail: 'client_state must be a valid Base-64 encoded string.', source: { pointer: '/client_state' } });
  }
  if (body.timeout_secs !== undefined && !(Number.isInteger(body.timeout_secs) && (body.timeout_secs as number) >= 5 && (body.timeout_secs as number) <= 120)) {
    problems.push({ code: '10015', title: 'Bad Request', detail: 'timeout_secs must be an integer from 5 to 120.', source: { pointer: '/timeout_secs' } });
  }
  if (body.time_limit_secs !== undefined && !(Number.isInteger(body.time_limit_secs) && (body.time_limit_secs as number) >= 1 && (body.time_limit_secs as number) <= 14_400)) {
    problems.push({ code: '10015', title: 'Bad Request', detail: 'time_limit_secs must be an integer up to 14400.', source: { pointer: '/time_limit_secs' } });
  }
  for (const [field, allowed] of Object.entries(ENUMS)) {
    if (body[field] !== undefined && !allowed.includes(body[field] as string)) {
      problems.push({ code: '10015', title: 'Bad Request', detail: `${field} must be one of ${allowed.join(', ')}.`, source: { pointer: `/${field}` } });
    }
  }
  return problems;
}

function eventDefaults(eventType: string, call: TelnyxFakeCall, recordingUrl: () => string): Record<string, unknown> {
  const start = call.startTime.toISOString();
  switch (eventType) {
    case 'call.initiated':
      return { direction: 'outgoing', state: 'bridging' };
    case 'call.answered':
      return { state: 'answered', start_time: start };
    case 'call.hangup':
      return { state: 'hangup', hangup_cause: 'normal_clearing', hangup_source: 'callee', sip_hangup_cause: '200', start_time: start };
    case 'call.machine.detection.ended':
      return { result: 'human' };
    case 'call.machine.premium.detection.ended':
      return { result: 'human_residence' };
    case 'call.recording.saved': {
      const url = recordingUrl();
      return {
        recording_id: call.recordingId ?? randomUUID(),
        channels: 'single',
        format: 'wav',
        recording_started_at: (call.answeredAt ?? call.startTime).toISOString(),
        recording_ended_at: (call.endTime ?? new Date()).toISOString(),
        recording_urls: { wav: url },
        public_recording_urls: {},
      };
    }
    case 'call.cost':
      return {
        status: 'success',
        total_cost: '0.0070',
        billed_duration_secs: 60,
        cost_parts: [{ call_part: 'call-control', billed_duration_secs: 60, cost: '0.0070', currency: 'USD', rate: '0.0070' }],
      };
    default:
      return {};
  }
}

function isUrl(value: unknown, protocols: string[]): boolean {
  if (typeof value !== 'string') return false;
  try {
    return protocols.includes(new URL(value).protocol);
  } catch {
    return false;
  }
}

function sendErrors(response: ServerResponse, status: number, errors: FakeError[], headers: Record<string, string> = {}): void {
  sendJson(response, status, { errors }, headers);
}

/** A read that fails as asked (`failNextStatusRead`, `failNextApplicationRead`). */
function sendReadFailure(response: ServerResponse, kind: TelnyxReadFailure): void {
  if (kind === 'server_error') return sendErrors(response, 500, [{ code: '10007', title: 'Unexpected error', detail: 'An unexpected error occured.' }]);
  if (kind === 'throttle') return sendErrors(response, 429, [{ code: '10011', title: 'Too many requests' }], { 'retry-after': '1' });
  sendErrors(response, 503, [{ code: '10007', title: 'Service unavailable' }]);
}

function sendXml(response: ServerResponse, status: number, code: string, message: string): void {
  const text = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;
  response.writeHead(status, { 'content-type': 'application/xml' });
  response.end(text);
}
