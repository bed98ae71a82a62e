import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { IncomingMessage, ServerResponse } from 'node:http';
import { basicCredentials, fieldPairs, FormFields, FormLoopbackFake, SentFormWebhook } from './form-loopback-fake';
import { LoopbackWebhook, LoopbackWebhookAnswer, readRequestBody } from './loopback-http-fake';
import { silentWav } from './silent-wav';

/**
 * A loopback stand-in for Twilio's REST API (2010-04-01) and for Twilio's
 * side of the webhooks. It checks requests the way Twilio does (HTTP Basic
 * auth with the Account SID + Auth Token or an API key, form encoding, the
 * dial parameters), answers in Twilio's shapes (`{ code, message, more_info,
 * status }` errors, Call resources, paged call lists filtered by To, From,
 * Status and StartTime), keeps the calls it placed, and can call
 * the URLs a call was created with, signed with X-Twilio-Signature exactly as
 * Twilio signs them.
 */
export class TwilioFake extends FormLoopbackFake<FakeTwilioCall, TwilioFailure> {
  static readonly ACCOUNT_SID = 'AC0123456789abcdef0123456789abcdef';
  static readonly AUTH_TOKEN = 'f00dfeedf00dfeedf00dfeedf00dfeed';

  readonly accountSid: string;
  readonly authToken: string;
  readonly apiKey: { sid: string; secret: string } | null;
  /** Every request received, failed ones included, in order. */
  readonly requests: RecordedRequest[] = [];
  /** Answered by `GET /Accounts/{sid}.json`; anything but `active` also refuses dial requests. */
  accountStatus: 'active' | 'suspended' | 'closed' = 'active';
  /** Calls whose resource cannot be read (`GET .../Calls/{sid}.json` answers 503, error 20503) while they are here. */
  readonly unreadableCalls = new Set<string>();

  private readonly recordings = new Map<string, { callSid: string; durationSeconds: number }>();

  constructor(options: { accountSid?: string; authToken?: string; apiKey?: { sid: string; secret: string } } = {}) {
    super('TwilioFake');
    this.accountSid = options.accountSid ?? TwilioFake.ACCOUNT_SID;
    this.authToken = options.authToken ?? TwilioFake.AUTH_TOKEN;
    this.apiKey = options.apiKey ?? null;
  }

  /** Credentials as a telephony configuration stores them. */
  get credentials(): Record<string, string> {
    return {
      account_sid: this.accountSid,
      auth_token: this.authToken,
      ...(this.apiKey ? { api_key_sid: this.apiKey.sid, api_key_secret: this.apiKey.secret } : {}),
    };
  }

  protected override handlerFailed(response: ServerResponse, error: unknown): void {
    json(response, 500, { code: 20500, message: String(error), status: 500 });
  }

  /** The next REST request answers 429 with Twilio error 20429 (not processed, safe to retry). */
  throttleNext(times = 1): void {
    this.failNext('throttle', times);
  }

  /** Dial requests received (`POST .../Calls.json`), in order. */
  dialRequests(): RecordedRequest[] {
    return this.requests.filter((request) => request.method === 'POST' && /\/Calls\.json$/.test(request.path));
  }

  /** Changes what a look-up of the call answers, without sending anything. */
  setCallStatus(sid: string, patch: Partial<Omit<FakeTwilioCall, 'sid'>>): FakeTwilioCall {
    const call = this.call(sid);
    Object.assign(call, patch);
    return call;
  }

  // ---- Twilio's side of the webhooks ----

  /** X-Twilio-Signature for a POST of these fields to this URL. */
  sign(url: string, fields: WebhookFields, authToken = this.authToken): string {
    const byName = new Map<string, Set<string>>();
    for (const [name, value] of fieldPairs(fields)) byName.set(name, (byName.get(name) ?? new Set()).add(value));
    let data = url;
    for (const name of [...byName.keys()].sort()) for (const value of [...byName.get(name)!].sort()) data += name + value;
    return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
  }

  /**
   * A request as Twilio would send it, not sent: for handing to
   * `verifyWebhook`/`parseWebhook` directly. `authToken` signs with another
   * token (a forgery); `signature: null` leaves the header out.
   */
  signedRequest(url: string, fields: WebhookFields, options: { authToken?: string; signature?: string | null } = {}): FakeWebhookRequest {
    const signature = options.signature === undefined ? this.sign(url, fields, options.authToken) : options.signature;
    const headers: Record<string, string> = {
      'user-agent': 'TwilioProxy/1.1',
      'i-twilio-idempotency-token': randomUUID(),
    };
    if (signature !== null) headers['x-twilio-signature'] = signature;
    return this.formWebhook(url, fields, headers);
  }

  /** POSTs signed fields to a URL (a status callback or anything else), as Twilio does. */
  async sendStatus(url: string, fields: WebhookFields, options: { authToken?: string; signature?: string | null } = {}): Promise<WebhookResponse> {
    return this.deliverForm(this.signedRequest(url, fields, options), fields);
  }

  /** The fields of a status callback for one of the calls placed here. */
  callbackFields(sid: string, callStatus: string, extra: Record<string, string> = {}): Record<string, string> {
    const call = this.call(sid);
    return {
      ...this.requestFields(call, callStatus),
      CallbackSource: 'call-progress-events',
      SequenceNumber: String(call.sequenceNumber++),
      Timestamp: rfc2822(new Date()),
      ...extra,
    };
  }

  /** The callee's phone rings: Twilio reports `ringing` when the call subscribed to it. */
  async ring(sid: string): Promise<WebhookResponse | null> {
    const call = this.setCallStatus(sid, { status: 'ringing', startTime: new Date() });
    return this.notify(call, 'ringing', 'ringing');
  }

  /**
   * The call is answered: Twilio fetches the call's Url (with `AnsweredBy`
   * when it was dialed with MachineDetection) and reports `answered`.
   * Returns our answer (TwiML).
   */
  async answer(sid: string, options: { answeredBy?: string } = {}): Promise<WebhookResponse> {
    const call = this.setCallStatus(sid, { status: 'in-progress', answeredAt: new Date() });
    const amd: Record<string, string> = call.machineDetection
      ? { AnsweredBy: options.answeredBy ?? 'human', MachineDetectionDuration: '1850' }
      : {};
    if (call.machineDetection) call.answeredBy = amd.AnsweredBy;
    const fields = { ...this.requestFields(call, 'in-progress'), ...amd };
    const answer = await this.sendStatus(call.url, fields);
    await this.notify(call, 'answered', 'in-progress', amd);
    return answer;
  }

  /**
   * The call ends after a conversation: `completed` with CallDuration; a
   * look-up then shows Price (`price: null`: not priced yet, as Twilio
   * shows a call for a while after it ends).
   */
  async complete(sid: string, options: { durationSeconds?: number; price?: string | null; priceUnit?: string } = {}): Promise<WebhookResponse | null> {
    const duration = options.durationSeconds ?? 42;
    const call = this.setCallStatus(sid, {
      status: 'completed',
      endTime: new Date(),
      duration,
      price: options.price === undefined ? '-0.01300' : options.price,
      priceUnit: options.priceUnit ?? 'USD',
    });
    return this.notify(call, 'completed', 'completed', { CallDuration: String(duration) });
  }

  /** The call ends unanswered: `busy`, `no-answer`, `failed` or `canceled`. */
  async end(sid: string, status: 'busy' | 'no-answer' | 'failed' | 'canceled', extra: Record<string, string> = {}): Promise<WebhookResponse | null> {
    const call = this.setCallStatus(sid, { status, endTime: new Date(), duration: 0 });
    return this.notify(call, 'completed', status, { CallDuration: '0', ...extra });
  }

  /** The call's recording is ready: Twilio POSTs RecordingStatusCallback; the media is then served here. */
  async recordingReady(sid: string, options: { durationSeconds?: number } = {}): Promise<WebhookResponse> {
    const call = this.call(sid);
    if (!call.recordingStatusCallback) throw new Error(`Call ${sid} was not dialed with a RecordingStatusCallback`);
    const recordingSid = `RE${randomBytes(16).toString('hex')}`;
    const durationSeconds = options.durationSeconds ?? call.duration ?? 42;
    this.recordings.set(recordingSid, { callSid: sid, durationSeconds });
    return this.sendStatus(call.recordingStatusCallback, {
      AccountSid: call.accountSid,
      CallSid: sid,
      RecordingSid: recordingSid,
      RecordingUrl: `${this.url}/2010-04-01/Accounts/${call.accountSid}/Recordings/${recordingSid}`,
      RecordingStatus: 'completed',
      RecordingDuration: String(durationSeconds),
      RecordingChannels: '1',
      RecordingSource: 'OutboundAPI',
      RecordingStartTime: rfc2822(call.answeredAt ?? new Date()),
      ErrorCode: '0',
    });
  }

  /** The bytes served for a recording: a WAV file of silence as long as the recording. */
  static recordingBytes(durationSeconds: number): Buffer {
    return silentWav(durationSeconds, 1);
  }

  // ---- the REST API ----

  protected async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const rawBody = await readRequestBody(request);
    const url = new URL(request.url ?? '/', 'http://fake');
    const contentType = String(request.headers['content-type'] ?? '');
    const form = contentType.startsWith('application/x-www-form-urlencoded') ? [...new URLSearchParams(rawBody.toString('utf8'))] : [];
    const recorded: RecordedRequest = {
      method: request.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: request.headers,
      rawBody,
      form,
      fields: Object.fromEntries(form.map(([name, value]) => [name, value])),
      at: new Date(),
    };
    this.requests.push(recorded);

    const failure = this.takeFailure(this.isDial(recorded));
    if (failure === 'timeout') return; // never answered; stop() closes the socket
    if (failure === 'reset') {
      // Twilio acted on the request, but the answer is lost on the way back.
      if (this.isDial(recorded) && this.authenticated(request) && this.validateDial(recorded) === null) this.createCall(recorded);
      request.socket.destroy();
      return;
    }
    if (failure) return this.fail(response, failure);

    if (!this.authenticated(request)) {
      return twilioError(response, 401, 20003, 'Authenticate');
    }
    const match = /^\/2010-04-01\/Accounts\/([^/]+?)(\.json|\/Calls\.json|\/Calls\/([^/]+)\.json|\/Recordings\/([^/]+?)\.(wav|mp3))$/.exec(url.pathname);
    if (!match) return twilioError(response, 404, 20404, `The requested resource ${url.pathname} was not found`);
    if (match[1] !== this.accountSid) return twilioError(response, 404, 20404, `The requested resource ${url.pathname} was not found`);

    if (match[2] === '.json' && recorded.method === 'GET') return json(response, 200, this.accountResource());
    if (match[2] === '/Calls.json' && recorded.method === 'POST') return this.dial(recorded, response);
    if (match[2] === '/Calls.json' && recorded.method === 'GET') return this.listCalls(recorded, response);
    if (match[3] && recorded.method === 'GET') {
      if (this.unreadableCalls.has(match[3])) return twilioError(response, 503, 20503, 'Service unavailable');
      const call = this.calls.get(match[3]);
      return call ? json(response, 200, this.callResource(call)) : twilioError(response, 404, 20404, `The requested resource ${url.pathname} was not found`);
    }
    if (match[3] && recorded.method === 'POST') return this.update(match[3], recorded, response);
    if (match[4] && recorded.method === 'GET') {
      const recording = this.recordings.get(match[4]);
      if (!recording) return twilioError(response, 404, 20404, `The requested resource ${url.pathname} was not found`);
      response.writeHead(200, { 'content-type': match[5] === 'wav' ? 'audio/x-wav' : 'audio/mpeg' });
      response.end(TwilioFake.recordingBytes(recording.durationSeconds));
      return;
    }
    return twilioError(response, 405, 20004, 'Method not allowed');
  }

  private dial(request: RecordedRequest, response: ServerResponse): void {
    if (this.accountStatus !== 'active') return twilioError(response, 401, 20005, 'Account not active');
    const problem = this.validateDial(request);
    if (problem) return twilioError(response, 400, problem.code, problem.message);
    const call = this.createCall(request);
    json(response, 201, this.callResource(call));
  }

  /**
   * Read multiple Call resources, newest first. Filters as Twilio documents
   * them: `To`, `From`, `Status`, and `StartTime` (a `YYYY-MM-DD` day in UTC;
   * `StartTime>` for calls started on or after that midnight, `StartTime<`
   * for on or before it), which leaves out calls not dialed yet (no start
   * time). `PageSize` (default 50, at most 1000) per page; `next_page_uri`
   * repeats the filters with the next `Page` and a `PageToken`.
   */
  private listCalls(request: RecordedRequest, response: ServerResponse): void {
    const query = request.query;
    const pageSize = query.has('PageSize') ? Number(query.get('PageSize')) : 50;
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000) return twilioError(response, 400, 20001, 'PageSize must be between 1 and 1000');
    const page = query.has('Page') ? Number(query.get('Page')) : 0;
    if (!Number.isInteger(page) || page < 0) return twilioError(response, 400, 20001, 'Page must be a non-negative integer');
    const startTimeFilters: Array<[string, (start: number, midnight: number) => boolean]> = [
      ['StartTime', (start, midnight) => start >= midnight && start < midnight + DAY_MS],
      ['StartTime>', (start, midnight) => start >= midnight],
      ['StartTime<', (start, midnight) => start <= midnight],
    ];
    let calls = [...this.calls.values()];
    for (const [name, keep] of startTimeFilters) {
      const day = query.get(name);
      if (day === null) continue;
      if (!/^\d{4}-\d{2}-\d{2}$/.test(day) || Number.isNaN(Date.parse(`${day}T00:00:00Z`))) {
        return twilioError(response, 400, 20001, `${name} must be a date as YYYY-MM-DD: ${day}`);
      }
      const midnight = Date.parse(`${day}T00:00:00Z`);
      calls = calls.filter((call) => call.startTime !== null && keep(call.startTime.getTime(), midnight));
    }
    for (const [name, field] of [['To', 'to'], ['From', 'from'], ['Status', 'status']] as const) {
      const wanted = query.get(name);
      if (wanted !== null) calls = calls.filter((call) => call[field] === wanted);
    }
    calls.sort((a, b) => b.dateCreated.getTime() - a.dateCreated.getTime());

    // A PageToken names the last call of the page before; without one, the page number counts.
    const token = query.get('PageToken');
    const afterToken = token ? calls.findIndex((call) => `PA${call.sid}` === token) + 1 : 0;
    const start = token && afterToken > 0 ? afterToken : page * pageSize;
    const slice = calls.slice(start, start + pageSize);
    const filters = new URLSearchParams([...query].filter(([name]) => !['Page', 'PageSize', 'PageToken'].includes(name)));
    const pageUri = (number: number, pageToken?: string) => {
      const paging = new URLSearchParams(filters);
      paging.set('PageSize', String(pageSize));
      paging.set('Page', String(number));
      if (pageToken) paging.set('PageToken', pageToken);
      return `${request.path}?${paging}`;
    };
    const more = start + slice.length < calls.length;
    json(response, 200, {
      calls: slice.map((call) => this.callResource(call)),
      start,
      end: start + Math.max(0, slice.length - 1),
      page,
      page_size: pageSize,
      uri: pageUri(page, token ?? undefined),
      first_page_uri: pageUri(0),
      previous_page_uri: page > 0 ? pageUri(page - 1) : null,
      next_page_uri: more ? pageUri(page + 1, `PA${slice[slice.length - 1].sid}`) : null,
    });
  }

  /** The checks Twilio makes on a dial request, with its error codes. */
  private validateDial(request: RecordedRequest): { code: number; message: string } | null {
    const field = (name: string) => request.form.find(([key]) => key === name)?.[1];
    const all = (name: string) => request.form.filter(([key]) => key === name).map(([, value]) => value);
    const to = field('To');
    const from = field('From');
    if (!to) return { code: 21201, message: "No 'To' number is specified" };
    if (!from) return { code: 21213, message: "No 'From' number is specified" };
    if (!E164.test(to)) return { code: 21211, message: `The 'To' number ${to} is not a valid phone number.` };
    if (!E164.test(from)) return { code: 21212, message: `The 'From' number ${from} is not a valid phone number, shortcode, or alphanumeric sender ID.` };
    if (!field('Url') && !field('Twiml') && !field('ApplicationSid')) return { code: 21205, message: 'Url parameter is required.' };
    for (const name of ['Url', 'StatusCallback', 'RecordingStatusCallback', 'AsyncAmdStatusCallback']) {
      const value = field(name);
      if (value !== undefined && !HTTP_URL.test(value)) return { code: 21205, message: `${name} is not a valid URL: ${value}` };
    }
    for (const name of ['Method', 'StatusCallbackMethod', 'RecordingStatusCallbackMethod']) {
      const value = field(name);
      if (value !== undefined && value !== 'GET' && value !== 'POST') return { code: 21200, message: `${name} must be GET or POST` };
    }
    const events = all('StatusCallbackEvent').flatMap((value) => value.split(' '));
    if (events.some((event) => !['initiated', 'ringing', 'answered', 'completed'].includes(event))) {
      return { code: 21200, message: `Invalid StatusCallbackEvent: ${events.join(', ')}` };
    }
    const amd = field('MachineDetection');
    if (amd !== undefined && amd !== 'Enable' && amd !== 'DetectMessageEnd') return { code: 21200, message: `Invalid MachineDetection: ${amd}` };
    const record = field('Record');
    if (record !== undefined && record !== 'true' && record !== 'false') return { code: 21200, message: `Invalid Record: ${record}` };
    const limit = field('TimeLimit');
    if (limit !== undefined && !(/^\d+$/.test(limit) && Number(limit) >= 1 && Number(limit) <= 86400)) {
      return { code: 21200, message: `Invalid TimeLimit: ${limit}` };
    }
    return null;
  }

  private createCall(request: RecordedRequest): FakeTwilioCall {
    const field = (name: string) => request.form.find(([key]) => key === name)?.[1];
    const sid = `CA${randomBytes(16).toString('hex')}`;
    const call: FakeTwilioCall = {
      sid,
      accountSid: this.accountSid,
      to: field('To')!,
      from: field('From')!,
      status: 'queued',
      url: field('Url') ?? '',
      statusCallback: field('StatusCallback') ?? null,
      statusCallbackEvents: request.form
        .filter(([key]) => key === 'StatusCallbackEvent')
        .flatMap(([, value]) => value.split(' ')),
      machineDetection: field('MachineDetection') ?? null,
      record: field('Record') === 'true',
      recordingStatusCallback: field('RecordingStatusCallback') ?? null,
      timeLimit: field('TimeLimit') ? Number(field('TimeLimit')) : null,
      dateCreated: new Date(),
      startTime: null,
      answeredAt: null,
      endTime: null,
      duration: null,
      price: null,
      priceUnit: 'USD',
      answeredBy: null,
      sequenceNumber: 0,
    };
    this.calls.set(sid, call);
    return call;
  }

  /** Update a call: `Status=canceled` cancels a queued or ringing call; `completed` also hangs up an answered one. */
  private update(sid: string, request: RecordedRequest, response: ServerResponse): void {
    const call = this.calls.get(sid);
    if (!call) return twilioError(response, 404, 20404, `The requested resource ${request.path} was not found`);
    const status = request.fields.Status;
    if (status !== undefined && status !== 'canceled' && status !== 'completed') {
      return twilioError(response, 400, 21200, `Invalid Status: ${status}`);
    }
    if (['completed', 'busy', 'failed', 'no-answer', 'canceled'].includes(call.status)) {
      return twilioError(response, 400, 21220, 'Call is not in-progress. Cannot redirect.');
    }
    let ended: 'canceled' | 'completed' | null = null;
    if (call.status === 'queued' || call.status === 'ringing') ended = 'canceled';
    else if (status === 'completed') ended = 'completed';
    if (ended) {
      Object.assign(call, { status: ended, endTime: new Date(), duration: ended === 'canceled' ? 0 : call.duration });
      // Twilio reports the end to StatusCallback, as for any other ending.
      void this.notify(call, 'completed', ended, { CallDuration: String(call.duration ?? 0) }).catch(() => undefined);
    }
    json(response, 200, this.callResource(call));
  }

  private async notify(call: FakeTwilioCall, event: string, callStatus: string, extra: Record<string, string> = {}): Promise<WebhookResponse | null> {
    if (!call.statusCallback || !call.statusCallbackEvents.includes(event)) return null;
    return this.sendStatus(call.statusCallback, this.callbackFields(call.sid, callStatus, extra));
  }

  /** The fields Twilio sends with every request about a call. */
  private requestFields(call: FakeTwilioCall, callStatus: string): Record<string, string> {
    return {
      AccountSid: call.accountSid,
      ApiVersion: '2010-04-01',
      CallSid: call.sid,
      CallStatus: callStatus,
      Called: call.to,
      Caller: call.from,
      Direction: 'outbound-api',
      From: call.from,
      To: call.to,
    };
  }

  private authenticated(request: IncomingMessage): boolean {
    const basic = basicCredentials(request);
    if (!basic) return false;
    const { user, password } = basic;
    if (user === this.accountSid && password === this.authToken) return true;
    return this.apiKey !== null && user === this.apiKey.sid && password === this.apiKey.secret;
  }

  private isDial(request: RecordedRequest): boolean {
    return request.method === 'POST' && /^\/2010-04-01\/Accounts\/[^/]+\/Calls\.json$/.test(request.path);
  }

  private fail(response: ServerResponse, failure: Exclude<TwilioFailure, 'reset' | 'timeout'>): void {
    if (failure === 'throttle') {
      response.setHeader('retry-after', '1');
      return twilioError(response, 429, 20429, 'Too Many Requests');
    }
    if (failure === 'unavailable') return twilioError(response, 503, 20503, 'Service unavailable');
    if (failure === 'server_error') return twilioError(response, 500, 20500, 'Internal Server Error');
    return twilioError(response, failure.status, failure.code, failure.message ?? `Error ${failure.code}`);
  }

  private accountResource(): Record<string, unknown> {
    return {
      sid: this.accountSid,
      owner_account_sid: this.accountSid,
      friendly_name: 'Fake account',
      status: this.accountStatus,
      type: 'Full',
      date_created: rfc2822(new Date(0)),
      uri: `/2010-04-01/Accounts/${this.accountSid}.json`,
    };
  }

  private callResource(call: FakeTwilioCall): Record<string, unknown> {
    return {
      sid: call.sid,
      account_sid: call.accountSid,
      to: call.to,
      to_formatted: call.to,
      from: call.from,
      from_formatted: call.from,
      status: call.status,
      direction: 'outbound-api',
      api_version: '2010-04-01',
      date_created: rfc2822(call.dateCreated),
      date_updated: rfc2822(new Date()),
      start_time: call.startTime ? rfc2822(call.startTime) : null,
      end_time: call.endTime ? rfc2822(call.endTime) : null,
      duration: call.duration === null ? null : String(call.duration),
      price: call.price,
      price_unit: call.priceUnit,
      answered_by: call.answeredBy,
      caller_name: null,
      parent_call_sid: null,
      uri: `/2010-04-01/Accounts/${call.accountSid}/Calls/${call.sid}.json`,
    };
  }
}

/** A Call as the fake keeps it: what the dial request asked for, and where the call is now. */
export interface FakeTwilioCall {
  sid: string;
  accountSid: string;
  to: string;
  from: string;
  status: 'queued' | 'ringing' | 'in-progress' | 'completed' | 'busy' | 'failed' | 'no-answer' | 'canceled';
  url: string;
  statusCallback: string | null;
  statusCallbackEvents: string[];
  machineDetection: string | null;
  record: boolean;
  recordingStatusCallback: string | null;
  timeLimit: number | null;
  dateCreated: Date;
  startTime: Date | null;
  answeredAt: Date | null;
  endTime: Date | null;
  duration: number | null;
  /** Negative, as Twilio reports charges (`-0.01300`). */
  price: string | null;
  priceUnit: string;
  answeredBy: string | null;
  sequenceNumber: number;
}

export type TwilioFailure =
  /** 429, error 20429: never processed. */
  | 'throttle'
  /** 503, error 20503. */
  | 'unavailable'
  /** 500, error 20500. */
  | 'server_error'
  /** The request is acted on (a dial places the call), then the connection drops unanswered. */
  | 'reset'
  /** No answer at all, until the client gives up. */
  | 'timeout'
  /** Any Twilio error, e.g. `{ status: 400, code: 21215 }` for a geo-permission refusal. */
  | { status: number; code: number; message?: string };

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  rawBody: Buffer;
  /** Form fields in order, names repeated as sent (empty when the body was not form-encoded). */
  form: Array<[string, string]>;
  /** The last value of each form field. */
  fields: Record<string, string>;
  at: Date;
}

export type FakeWebhookRequest = LoopbackWebhook;
export type WebhookResponse = LoopbackWebhookAnswer;

export type SentWebhook = SentFormWebhook;

export type WebhookFields = FormFields;

const E164 = /^\+[1-9]\d{6,14}$/;
const DAY_MS = 24 * 3600 * 1000;
const HTTP_URL = /^https?:\/\/[^\s/]+/;

/** Twilio writes dates as RFC 2822: `Mon, 16 Aug 2010 03:45:01 +0000`. */
function rfc2822(date: Date): string {
  return date.toUTCString().replace('GMT', '+0000');
}

function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  response.end(JSON.stringify(body));
}

function twilioError(response: ServerResponse, status: number, code: number, message: string): void {
  json(response, status, { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status });
}
