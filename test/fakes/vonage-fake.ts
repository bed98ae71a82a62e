import { createHash, createHmac, generateKeyPairSync, KeyObject, randomBytes, randomUUID, verify } from 'node:crypto';
import { IncomingMessage, ServerResponse } from 'node:http';
import { DeliveryResult, JsonLoopbackFake, parseJson, RecordedJsonRequest, sendJson, SignedWebhook } from './json-loopback-fake';

/**
 * A loopback stand-in for the Vonage Voice API (v1), for tests. It checks
 * requests as Vonage does (an RS256 JWT signed with the application's private
 * key and verified with its public key; JSON bodies; `to`/`from` as phone
 * endpoints of 7–15 digits; the documented enums and bounds), rejects call
 * creations beyond 3 per rolling second with 429 as Vonage does, answers in
 * its RFC 7807 problem shape, keeps the calls it created for look-ups,
 * listings and hang-ups, serves recordings behind the application JWT, and sends webhooks
 * signed as Vonage's: a HS256 JWT with the signature secret whose
 * `payload_hash` is the SHA-256 of the body — only ever to loopback addresses.
 */
export class VonageFake extends JsonLoopbackFake {
  readonly applicationId: string;
  /** The application's private key (PEM), which the customer downloads from the dashboard. */
  readonly privateKeyPem: string;
  readonly signatureSecret: string;
  readonly apiKey: string;
  readonly requests: RecordedRequest[] = [];
  /** The calls it created, by uuid. */
  readonly calls = new Map<string, VonageFakeCall>();
  /** Webhooks the fake sent on its own (after a hang-up), with what the receiver answered. */
  readonly deliveries: { url: string; status: string; httpStatus: number | null; error?: string }[] = [];

  private readonly publicKey: KeyObject;
  private readonly files = new Map<string, { body: Buffer; contentType: string }>();
  private readonly failures: VonageFailure[] = [];
  private readonly listFailures: VonageReadFailure[] = [];
  private readonly detailFailures: Array<'throttle'> = [];
  private readonly creations: number[] = [];

  constructor(private readonly options: VonageFakeOptions = {}) {
    super('VonageFake');
    this.applicationId = options.applicationId ?? randomUUID();
    this.signatureSecret = options.signatureSecret ?? randomBytes(24).toString('base64url');
    this.apiKey = options.apiKey ?? randomBytes(4).toString('hex');
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.publicKey = publicKey;
    this.privateKeyPem = privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
  }

  /** The credentials a telephony configuration needs to use this fake. */
  get credentials(): { application_id: string; private_key: string; signature_secret: string } {
    return { application_id: this.applicationId, private_key: this.privateKeyPem, signature_secret: this.signatureSecret };
  }

  reset(): void {
    this.requests.length = 0;
    this.calls.clear();
    this.deliveries.length = 0;
    this.failures.length = 0;
    this.listFailures.length = 0;
    this.detailFailures.length = 0;
    this.creations.length = 0;
    this.files.clear();
  }

  /** The next call creation answers 429. */
  throttleNext(): void {
    this.failures.push('throttle');
  }

  /** The next call creation fails this way (`reset` creates the call, then drops the connection unanswered). */
  failNext(kind: VonageFailure): void {
    this.failures.push(kind);
  }

  /** The next listing of calls (`GET /v1/calls`, what a credentials check asks) fails this way. */
  failNextCallListing(kind: VonageReadFailure): void {
    this.listFailures.push(kind);
  }

  /** The next read of one call (`GET /v1/calls/{uuid}`) answers 429. */
  throttleNextCallRead(): void {
    this.detailFailures.push('throttle');
  }

  /** The `POST /v1/calls` requests received. */
  dialRequests(): RecordedRequest[] {
    return this.requests.filter((request) => request.method === 'POST' && request.path === '/v1/calls');
  }

  /** The call created for a run, found by its answer URL (`.../answer/{run_id}`). */
  callForRun(runId: number): VonageFakeCall | undefined {
    return [...this.calls.values()].find((call) => call.answerUrl && new URL(call.answerUrl).pathname.endsWith(`/${runId}`));
  }

  /** Stores a recording and returns its Vonage-style URL (`/v1/files/{uuid}`, fetched with the application JWT). */
  addRecording(body: Buffer = Buffer.from('RIFF\0\0\0\0WAVE'), contentType = 'audio/wav'): string {
    const id = randomUUID();
    this.files.set(id, { body, contentType });
    return `${this.url}/v1/files/${id}`;
  }

  /**
   * The event Vonage would post for one of its calls at `status`, with the
   * fields documented for it (duration, rate and price on `completed`).
   */
  callEvent(uuid: string, status: string, extra: Record<string, unknown> = {}, at = new Date()): Record<string, unknown> {
    const call = this.requireCall(uuid);
    const base: Record<string, unknown> = {
      from: call.from,
      to: call.to,
      uuid: call.uuid,
      conversation_uuid: call.conversationUuid,
      status,
      direction: 'outbound',
      timestamp: at.toISOString(),
    };
    if (status === 'completed') {
      const start = call.answeredAt ?? call.createdAt;
      Object.assign(base, {
        start_time: start.toISOString(),
        end_time: at.toISOString(),
        duration: String(Math.max(0, Math.round((at.getTime() - start.getTime()) / 1000))),
        rate: '0.01350000',
        price: '0.00450000',
        network: '23410',
      });
    }
    if (status === 'machine' || status === 'human') {
      delete base.from;
      delete base.to;
      delete base.direction;
    }
    return { ...base, ...extra };
  }

  /** Moves a call to `status` and posts the event to the call's event_url. */
  async sendCallEvent(uuid: string, status: string, extra: Record<string, unknown> = {}): Promise<DeliveryResult> {
    const call = this.requireCall(uuid);
    const at = new Date();
    if (status === 'answered') call.answeredAt = at;
    call.status = status;
    if (FINAL.includes(status)) call.endedAt = at;
    const event = this.callEvent(uuid, status, extra, at);
    if (status === 'completed') Object.assign(call, { duration: event.duration, price: event.price, rate: event.rate });
    if (!call.eventUrl) throw new Error(`Call ${uuid} was created without an event_url`);
    return this.sendEvent(call.eventUrl, event);
  }

  /**
   * Answers a call as Vonage does: POSTs the signed answer request to its
   * answer_url and returns the NCCO it got back.
   */
  async answerCall(uuid: string): Promise<{ status: number; ncco: unknown }> {
    const call = this.requireCall(uuid);
    if (!call.answerUrl) throw new Error(`Call ${uuid} was created without an answer_url`);
    const result = await this.sendEvent(call.answerUrl, {
      to: call.to,
      from: call.from,
      uuid: call.uuid,
      conversation_uuid: call.conversationUuid,
    });
    const ncco = parseJson(result.body);
    call.ncco = ncco;
    return { status: result.status, ncco };
  }

  /**
   * Posts a `record` event for a call's recording to `url` (by default the
   * eventUrl of the `record` action in the NCCO the call got).
   */
  async sendRecording(uuid: string, body?: Buffer, url?: string): Promise<DeliveryResult & { recordingUrl: string }> {
    const call = this.requireCall(uuid);
    const target = url ?? recordEventUrl(call.ncco);
    if (!target) throw new Error(`Call ${uuid} has no record action to report to`);
    const recordingUrl = this.addRecording(body);
    const now = new Date();
    const result = await this.sendEvent(target, {
      start_time: (call.answeredAt ?? call.createdAt).toISOString(),
      recording_url: recordingUrl,
      size: body?.length ?? 12,
      recording_uuid: recordingUrl.slice(recordingUrl.lastIndexOf('/') + 1),
      end_time: now.toISOString(),
      conversation_uuid: call.conversationUuid,
      timestamp: now.toISOString(),
    });
    return { ...result, recordingUrl };
  }

  /**
   * Signs a body for `url` as Vonage does; nothing is sent. `iatSeconds`
   * backdates the token, `secret` signs with another secret, `jti` names the
   * token (a fresh UUID otherwise).
   */
  signedRequest(url: string, body: string | object, options: { iatSeconds?: number; secret?: string; jti?: string } = {}): SignedWebhook {
    return this.signedJson(url, body, (rawBody) => {
      const claims = {
        iat: options.iatSeconds ?? Math.floor(Date.now() / 1000),
        jti: options.jti ?? randomUUID(),
        iss: 'Vonage',
        payload_hash: createHash('sha256').update(rawBody).digest('hex'),
        api_key: this.apiKey,
        application_id: this.applicationId,
      };
      return { 'user-agent': 'Vonage-Voice', authorization: `Bearer ${hs256Jwt(claims, options.secret ?? this.signatureSecret)}` };
    });
  }

  /** Signs and POSTs a webhook body to `url` (loopback only). */
  async sendEvent(url: string, event: string | object): Promise<DeliveryResult> {
    return this.deliver(this.signedRequest(url, event));
  }

  protected async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const { url, recorded: received } = await this.readJsonRequest(request);
    const recorded: RecordedRequest = { ...received, jwtClaims: null };
    this.requests.push(recorded);

    if (!url.pathname.startsWith('/v1/')) return sendProblem(response, 404, 'not-found', 'Not Found', 'The requested resource does not exist');
    const claims = this.authenticate(request.headers.authorization);
    if (!claims) return sendProblem(response, 401, 'unauthorized', 'Unauthorized', 'You did not provide correct credentials.');
    recorded.jwtClaims = claims;

    const callMatch = /^\/v1\/calls\/([^/]+)$/.exec(url.pathname);
    const fileMatch = /^\/v1\/files\/([^/]+)$/.exec(url.pathname);
    if (recorded.method === 'POST' && url.pathname === '/v1/calls') return this.create(request, recorded, response);
    if (recorded.method === 'GET' && url.pathname === '/v1/calls') return this.list(url, response);
    if (callMatch && recorded.method === 'GET') return this.details(decodeURIComponent(callMatch[1]), response);
    if (callMatch && recorded.method === 'PUT') return this.modify(decodeURIComponent(callMatch[1]), recorded, response);
    if (fileMatch && recorded.method === 'GET') return this.file(decodeURIComponent(fileMatch[1]), response);
    return sendProblem(response, 404, 'not-found', 'Not Found', `${recorded.method} ${url.pathname}`);
  }

  /** The application JWT: RS256, verified with the application's public key, with application_id, iat and jti. */
  private authenticate(header: string | undefined): Record<string, unknown> | null {
    const token = /^Bearer\s+(\S+)$/.exec(header ?? '')?.[1];
    const parts = token?.split('.');
    if (!parts || parts.length !== 3) return null;
    try {
      const jwtHeader = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8')) as Record<string, unknown>;
      const claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as Record<string, unknown>;
      if (jwtHeader.alg !== 'RS256') return null;
      if (!verify('sha256', Buffer.from(`${parts[0]}.${parts[1]}`), this.publicKey, Buffer.from(parts[2], 'base64url'))) return null;
      const now = Date.now() / 1000;
      if (claims.application_id !== this.applicationId) return null;
      if (typeof claims.iat !== 'number' || claims.iat > now + 60) return null;
      if (typeof claims.jti !== 'string' || !claims.jti) return null;
      if (claims.exp !== undefined && (typeof claims.exp !== 'number' || claims.exp < now)) return null;
      if (typeof claims.nbf === 'number' && claims.nbf > now + 60) return null;
      return claims;
    } catch {
      return null;
    }
  }

  private create(request: IncomingMessage, recorded: RecordedRequest, response: ServerResponse): void {
    const failure = this.failures.shift();
    if (failure === 'throttle') return this.throttled(response);
    if (failure === 'unauthorized') return sendProblem(response, 401, 'unauthorized', 'Unauthorized', 'You did not provide correct credentials.');
    if (failure === 'account_suspended') return sendProblem(response, 403, 'account-suspended', 'Forbidden', 'This account has been suspended');
    if (failure === 'low_balance') {
      return sendProblem(response, 403, 'low-balance', 'Forbidden', 'This request could not be performed due to your account balance being low.');
    }
    if (failure === 'server_error') return sendProblem(response, 500, 'internal-error', 'Internal Server Error', 'An error has occurred in the platform');
    if (failure === 'unavailable') return sendProblem(response, 503, 'unavailable', 'Service Unavailable', 'Please retry later');

    if (!String(request.headers['content-type'] ?? '').startsWith('application/json') || !isObject(recorded.body)) {
      return sendProblem(response, 400, 'invalid-json', 'Bad Request', 'The request body is not valid JSON');
    }
    const body = recorded.body;
    const invalid = createProblems(body);
    if (failure === 'invalid_number') invalid.push({ name: 'to[0].number', reason: 'The number is not a valid or reachable number' });
    if (invalid.length) {
      return sendProblem(response, 400, 'invalid-params', 'Bad Request', 'The value of one or more parameters is invalid', { invalid_parameters: invalid });
    }

    const now = Date.now();
    while (this.creations.length && this.creations[0] <= now - 1000) this.creations.shift();
    if (this.creations.length >= (this.options.callsPerSecond ?? 3)) return this.throttled(response);
    this.creations.push(now);

    const to = (body.to as { number: string }[])[0].number;
    const call: VonageFakeCall = {
      uuid: randomUUID(),
      conversationUuid: `CON-${randomUUID()}`,
      to,
      from: (body.from as { number: string }).number,
      answerUrl: Array.isArray(body.answer_url) ? String(body.answer_url[0]) : null,
      eventUrl: Array.isArray(body.event_url) ? String(body.event_url[0]) : null,
      request: body,
      status: 'started',
      createdAt: new Date(now),
    };
    this.calls.set(call.uuid, call);
    if (failure === 'reset') {
      request.socket.destroy();
      return;
    }
    sendJson(response, 201, { uuid: call.uuid, status: 'started', direction: 'outbound', conversation_uuid: call.conversationUuid });
  }

  private throttled(response: ServerResponse): void {
    sendProblem(response, 429, 'throttled', 'Too Many Requests', 'You have exceeded the 3 call creations per second of this account');
  }

  /** `GET /v1/calls`: the application's calls, newest first, a page of `page_size` (1–100, default 10) from `record_index`. */
  private list(url: URL, response: ServerResponse): void {
    const failure = this.listFailures.shift();
    if (failure === 'server_error') return sendProblem(response, 500, 'internal-error', 'Internal Server Error', 'An error has occurred in the platform');
    if (failure === 'unavailable') return sendProblem(response, 503, 'unavailable', 'Service Unavailable', 'Please retry later');
    const pageSize = Number(url.searchParams.get('page_size') ?? 10);
    const recordIndex = Number(url.searchParams.get('record_index') ?? 0);
    const invalid: { name: string; reason: string }[] = [];
    if (!isIntegerIn(pageSize, 1, 100)) invalid.push({ name: 'page_size', reason: 'Must be an integer from 1 to 100' });
    if (!isIntegerIn(recordIndex, 0, Number.MAX_SAFE_INTEGER)) invalid.push({ name: 'record_index', reason: 'Must be a non-negative integer' });
    if (invalid.length) {
      return sendProblem(response, 400, 'invalid-params', 'Bad Request', 'The value of one or more parameters is invalid', { invalid_parameters: invalid });
    }
    const calls = [...this.calls.values()].reverse();
    sendJson(response, 200, {
      count: calls.length,
      page_size: pageSize,
      record_index: recordIndex,
      _links: { self: { href: `/calls?page_size=${pageSize}&record_index=${recordIndex}` } },
      _embedded: {
        calls: calls.slice(recordIndex, recordIndex + pageSize).map((call) => ({
          _links: { self: { href: `/calls/${call.uuid}` } },
          uuid: call.uuid,
          conversation_uuid: call.conversationUuid,
          to: { type: 'phone', number: call.to },
          from: { type: 'phone', number: call.from },
          status: call.status,
          direction: 'outbound',
        })),
      },
    });
  }

  private details(uuid: string, response: ServerResponse): void {
    if (this.detailFailures.shift()) return this.throttled(response);
    const call = this.calls.get(uuid);
    if (!call) return sendProblem(response, 404, 'not-found', 'Not Found', 'The requested resource does not exist, or you do not have access to it');
    sendJson(response, 200, {
      _links: { self: { href: `/calls/${call.uuid}` } },
      uuid: call.uuid,
      conversation_uuid: call.conversationUuid,
      to: { type: 'phone', number: call.to },
      from: { type: 'phone', number: call.from },
      status: call.status,
      direction: 'outbound',
      ...(call.status === 'completed'
        ? {
            rate: call.rate ?? '0.01350000',
            price: call.price ?? '0.00450000',
            duration: call.duration ?? '0',
            start_time: vonageTimestamp(call.answeredAt ?? call.createdAt),
            end_time: vonageTimestamp(call.endedAt ?? new Date()),
            network: '23410',
          }
        : {}),
    });
  }

  private modify(uuid: string, recorded: RecordedRequest, response: ServerResponse): void {
    const call = this.calls.get(uuid);
    if (!call) return sendProblem(response, 404, 'not-found', 'Not Found', 'The requested resource does not exist, or you do not have access to it');
    const action = isObject(recorded.body) ? recorded.body.action : undefined;
    if (!['hangup', 'mute', 'unmute', 'earmuff', 'unearmuff', 'transfer'].includes(action as string)) {
      return sendProblem(response, 400, 'invalid-params', 'Bad Request', 'Unknown action', { invalid_parameters: [{ name: 'action', reason: 'Unknown action' }] });
    }
    response.writeHead(204);
    response.end();
    if (action !== 'hangup' || FINAL.includes(call.status)) return;
    call.hungUpByApi = true;
    const at = new Date();
    const status = call.answeredAt ? 'completed' : 'cancelled';
    const event = this.callEvent(uuid, status, {}, at);
    call.status = status;
    call.endedAt = at;
    if (status === 'completed') Object.assign(call, { duration: event.duration, price: event.price, rate: event.rate });
    if (call.eventUrl && this.options.autoWebhooks !== false) {
      // Vonage then reports the call's end to its event_url.
      const url = call.eventUrl;
      setImmediate(() => {
        this.sendEvent(url, event).then(
          (result) => this.deliveries.push({ url, status, httpStatus: result.status }),
          (error: Error) => this.deliveries.push({ url, status, httpStatus: null, error: error.message }),
        );
      });
    }
  }

  private file(id: string, response: ServerResponse): void {
    const file = this.files.get(id);
    if (!file) return sendProblem(response, 404, 'not-found', 'Not Found', 'The requested resource does not exist');
    response.writeHead(200, { 'content-type': file.contentType, 'content-length': file.body.length });
    response.end(file.body);
  }

  private requireCall(uuid: string): VonageFakeCall {
    const call = this.calls.get(uuid);
    if (!call) throw new Error(`VonageFake created no call ${uuid}`);
    return call;
  }
}

export interface VonageFakeOptions {
  applicationId?: string;
  signatureSecret?: string;
  apiKey?: string;
  /** Call creations allowed per rolling second before 429 (Vonage: 3). */
  callsPerSecond?: number;
  /** Post the final status to the call's event_url after a hang-up (default true). */
  autoWebhooks?: boolean;
}

export type VonageFailure =
  | 'throttle'
  | 'unauthorized'
  | 'invalid_number'
  | 'account_suspended'
  | 'low_balance'
  | 'server_error'
  | 'unavailable'
  | 'reset';

/** How a read can fail: 500 or 503, in Vonage's problem shape. */
export type VonageReadFailure = 'server_error' | 'unavailable';

export interface VonageFakeCall {
  uuid: string;
  conversationUuid: string;
  to: string;
  from: string;
  answerUrl: string | null;
  eventUrl: string | null;
  /** The creation body as received. */
  request: Record<string, unknown>;
  status: string;
  createdAt: Date;
  answeredAt?: Date;
  endedAt?: Date;
  duration?: unknown;
  price?: unknown;
  rate?: unknown;
  hungUpByApi?: boolean;
  /** The NCCO our answer URL returned, once `answerCall` ran. */
  ncco?: unknown;
}

export interface RecordedRequest extends RecordedJsonRequest {
  /** The claims of a valid application JWT, or null. */
  jwtClaims: Record<string, unknown> | null;
}


const FINAL = ['completed', 'busy', 'cancelled', 'failed', 'rejected', 'timeout', 'unanswered'];
const PHONE = /^\d{7,15}$/;

function createProblems(body: Record<string, unknown>): { name: string; reason: string }[] {
  const invalid: { name: string; reason: string }[] = [];
  if (!Array.isArray(body.to) || body.to.length === 0) {
    invalid.push({ name: 'to', reason: 'Is required and must be a non-empty array' });
  } else {
    body.to.forEach((endpoint: unknown, index) => {
      if (!isObject(endpoint) || endpoint.type !== 'phone') invalid.push({ name: `to[${index}].type`, reason: 'Must be phone' });
      else if (typeof endpoint.number !== 'string' || !PHONE.test(endpoint.number)) {
        invalid.push({ name: `to[${index}].number`, reason: 'Must be 7 to 15 digits, without +' });
      }
    });
  }
  if (body.random_from_number !== true) {
    if (!isObject(body.from) || body.from.type !== 'phone') invalid.push({ name: 'from', reason: 'Is required: a phone endpoint' });
    else if (typeof body.from.number !== 'string' || !PHONE.test(body.from.number)) {
      invalid.push({ name: 'from.number', reason: 'Must be 7 to 15 digits, without +' });
    }
  }
  if (body.ncco === undefined) {
    if (!isUrlArray(body.answer_url)) invalid.push({ name: 'answer_url', reason: 'Is required: an array of URLs' });
  }
  if (body.event_url !== undefined && !isUrlArray(body.event_url)) invalid.push({ name: 'event_url', reason: 'Must be an array of URLs' });
  for (const field of ['answer_method', 'event_method']) {
    if (body[field] !== undefined && !['GET', 'POST'].includes(body[field] as string)) invalid.push({ name: field, reason: 'Must be GET or POST' });
  }
  if (body.machine_detection !== undefined && !['continue', 'hangup'].includes(body.machine_detection as string)) {
    invalid.push({ name: 'machine_detection', reason: 'Must be continue or hangup' });
  }
  if (body.length_timer !== undefined && !isIntegerIn(body.length_timer, 1, 86_400)) {
    invalid.push({ name: 'length_timer', reason: 'Must be an integer from 1 to 86400' });
  }
  if (body.ringing_timer !== undefined && !isIntegerIn(body.ringing_timer, 1, 120)) {
    invalid.push({ name: 'ringing_timer', reason: 'Must be an integer from 1 to 120' });
  }
  return invalid;
}

function recordEventUrl(ncco: unknown): string | null {
  if (!Array.isArray(ncco)) return null;
  const record = ncco.find((action: unknown) => isObject(action) && action.action === 'record') as Record<string, unknown> | undefined;
  return Array.isArray(record?.eventUrl) && typeof record.eventUrl[0] === 'string' ? record.eventUrl[0] : null;
}

function hs256Jwt(claims: Record<string, unknown>, secret: string): string {
  const header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${header}.${payload}.${createHmac('sha256', secret).update(`${header}.${payload}`).digest('base64url')}`;
}

/** Vonage's `YYYY-MM-DD HH:MM:SS` (UTC) in call details. */
function vonageTimestamp(at: Date): string {
  return at.toISOString().replace('T', ' ').replace(/\.\d{3}Z$/, '');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isUrlArray(value: unknown): boolean {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((item) => {
      try {
        return ['http:', 'https:'].includes(new URL(String(item)).protocol);
      } catch {
        return false;
      }
    })
  );
}

function isIntegerIn(value: unknown, min: number, max: number): boolean {
  return Number.isInteger(value) && (value as number) >= min && (value as number) <= max;
}

function sendProblem(response: ServerResponse, status: number, code: string, title: string, detail: string, extra: Record<string, unknown> = {}): void {
  const text = JSON.stringify({ type: `https://developer.nexmo.com/api-errors#${code}`, title, detail, instance: randomUUID(), ...extra });
  response.writeHead(status, { 'content-type': 'application/problem+json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}
