import { createHmac, randomInt, randomUUID } from 'node:crypto';
import { IncomingMessage, ServerResponse } from 'node:http';
import { basicCredentials, fieldPairs, FormFields, FormLoopbackFake, SentFormWebhook } from './form-loopback-fake';
import { LoopbackWebhook, LoopbackWebhookAnswer, readRequestBody } from './loopback-http-fake';
import { silentWav } from './silent-wav';

/**
 * A loopback stand-in for Plivo's Voice API (`/v1/Account/{auth_id}/...`)
 * and for Plivo's side of the webhooks. It checks requests the way Plivo does
 * (HTTP Basic auth with Auth ID + Auth Token, a JSON body, the Make-a-call
 * parameters), answers in Plivo's shapes (`{ api_id, error }` errors,
 * `{ api_id, message, request_uuid }` for a dial, live/queued calls and call
 * detail records), keeps the calls it placed, and can call the URLs a call
 * was created with, form-encoded and signed with X-Plivo-Signature-V3 (and
 * -Ma-V3) exactly as Plivo signs them.
 */
export class PlivoFake extends FormLoopbackFake<FakePlivoCall, PlivoFailure> {
  static readonly AUTH_ID = 'MAFAKEPLIVOACCOUNT01';
  static readonly AUTH_TOKEN = 'ZmFrZS1wbGl2by1hdXRoLXRva2VuLWZvci10ZXN0';

  readonly authId: string;
  readonly authToken: string;
  /** Signs X-Plivo-Signature-Ma-V3 (the main account's token; the same one unless the account is a subaccount). */
  readonly mainAccountAuthToken: string;
  /** Every request received, failed ones included, in order. */
  readonly requests: RecordedPlivoRequest[] = [];
  /** When true, dial requests answer "call queued" and calls wait in the queue until rung. */
  queueCalls = false;

  private readonly recordings = new Map<string, { callUuid: string; durationSeconds: number }>();

  constructor(options: { authId?: string; authToken?: string; mainAccountAuthToken?: string } = {}) {
    super('PlivoFake');
    this.authId = options.authId ?? PlivoFake.AUTH_ID;
    this.authToken = options.authToken ?? PlivoFake.AUTH_TOKEN;
    this.mainAccountAuthToken = options.mainAccountAuthToken ?? this.authToken;
  }

  /** Credentials as a telephony configuration stores them. */
  get credentials(): Record<string, string> {
    return { auth_id: this.authId, auth_token: this.authToken };
  }

  protected override handlerFailed(response: ServerResponse, error: unknown): void {
    plivoError(response, 500, String(error));
  }

  /** The next REST request answers 429 (rate limited; nothing is placed). */
  throttleNext(times = 1): void {
    this.failNext('throttle', times);
  }

  /** Dial requests received (`POST /v1/Account/{id}/Call/`), in order. */
  dialRequests(): RecordedPlivoRequest[] {
    return this.requests.filter((request) => request.method === 'POST' && /^\/v1\/Account\/[^/]+\/Call\/$/.test(request.path));
  }

  /** Changes what look-ups of the call answer, without sending anything. */
  setCallStatus(uuid: string, patch: Partial<Omit<FakePlivoCall, 'requestUuid'>>): FakePlivoCall {
    const call = this.call(uuid);
    Object.assign(call, patch);
    return call;
  }

  // ---- Plivo's side of the webhooks ----

  /** X-Plivo-Signature-V3 for a request with these parameters (a POST's form fields) to this URL. */
  sign(url: string, fields: PlivoWebhookFields, nonce: string, options: { method?: string; authToken?: string } = {}): string {
    const method = options.method ?? 'POST';
    const parsed = new URL(url);
    let base = `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
    const query = group([...parsed.searchParams]);
    const params = group(fieldPairs(fields));
    const sortedQuery = [...query.keys()]
      .sort()
      .flatMap((name) => [...query.get(name)!].sort().map((value) => `${name}=${value}`))
      .join('&');
    if (method === 'GET') {
      const all = group([...parsed.searchParams, ...fieldPairs(fields)]);
      const getQuery = [...all.keys()]
        .sort()
        .flatMap((name) => [...all.get(name)!].sort().map((value) => `${name}=${value}`))
        .join('&');
      if (getQuery) base += `?${getQuery}`;
    } else {
      if (sortedQuery || params.size > 0) base += `?${sortedQuery}`;
      if (sortedQuery && params.size > 0) base += '.';
      for (const name of [...params.keys()].sort()) for (const value of [...params.get(name)!].sort()) base += name + value;
    }
    return createHmac('sha256', options.authToken ?? this.authToken).update(`${base}.${nonce}`, 'utf8').digest('base64');
  }

  /**
   * A form-encoded POST as Plivo would send it, not sent: for handing to
   * `verifyWebhook`/`parseWebhook` directly. `authToken` signs with another
   * token (a forgery); `signature: null` leaves the signature headers out;
   * `accountSignatureMoved` sends the account's signature in the
   * main-account header and X-Plivo-Signature-V3 empty, as a replayed copy
   * reworded to look new might.
   */
  signedRequest(
    url: string,
    fields: PlivoWebhookFields,
    options: { authToken?: string; signature?: string | null; nonce?: string; mainAccountSignature?: boolean; accountSignatureMoved?: boolean } = {},
  ): FakePlivoWebhookRequest {
    const nonce = options.nonce ?? String(randomInt(10 ** 9, 10 ** 10 - 1)) + String(randomInt(10 ** 9, 10 ** 10 - 1));
    const headers: Record<string, string> = {
      'user-agent': 'PlivoHTTP/1.0',
      'x-plivo-signature-v3-nonce': nonce,
    };
    if (options.signature !== null) {
      headers['x-plivo-signature-v3'] = options.signature ?? this.sign(url, fields, nonce, { authToken: options.authToken });
      if (options.mainAccountSignature !== false) {
        headers['x-plivo-signature-ma-v3'] = this.sign(url, fields, nonce, { authToken: options.authToken ?? this.mainAccountAuthToken });
      }
      if (options.accountSignatureMoved) {
        headers['x-plivo-signature-ma-v3'] = headers['x-plivo-signature-v3'];
        headers['x-plivo-signature-v3'] = '';
      }
    }
    return this.formWebhook(url, fields, headers);
  }

  /** POSTs signed fields to a URL, as Plivo does. */
  async sendStatus(
    url: string,
    fields: PlivoWebhookFields,
    options: { authToken?: string; signature?: string | null; nonce?: string; accountSignatureMoved?: boolean } = {},
  ): Promise<PlivoWebhookResponse> {
    return this.deliverForm(this.signedRequest(url, fields, options), fields);
  }

  /** The fields Plivo sends with every callback about one of the calls placed here. */
  callbackFields(uuid: string, callStatus: string, extra: Record<string, string> = {}): Record<string, string> {
    const call = this.call(uuid);
    return {
      CallUUID: call.requestUuid,
      RequestUUID: call.requestUuid,
      ALegUUID: call.requestUuid,
      ALegRequestUUID: call.requestUuid,
      CallStatus: callStatus,
      Direction: 'outbound',
      From: call.from,
      To: call.to,
      ParentAuthID: this.authId,
      SessionStart: plivoTime(call.dateCreated),
      ...extra,
    };
  }

  /** The callee's phone rings: Plivo notifies ring_url. */
  async ring(uuid: string): Promise<PlivoWebhookResponse | null> {
    const call = this.setCallStatus(uuid, { status: 'ringing' });
    return call.ringUrl ? this.sendStatus(call.ringUrl, this.callbackFields(uuid, 'ringing', { Event: 'Ring' })) : null;
  }

  /**
   * The call is answered: Plivo fetches answer_url and runs the XML it gets.
   * A `<Record callbackUrl>` in it is remembered for `recordingReady`.
   */
  async answer(uuid: string): Promise<PlivoWebhookResponse> {
    const call = this.setCallStatus(uuid, { status: 'in-progress', answerTime: new Date() });
    const answer = await this.sendStatus(call.answerUrl, this.callbackFields(uuid, 'in-progress', { Event: 'StartApp' }));
    const record = /<Record\b[^>]*\bcallbackUrl="([^"]*)"/.exec(answer.body);
    if (record) call.recordCallbackUrl = unescapeXml(record[1]);
    return answer;
  }

  /**
   * Machine detection finished: Plivo posts `Machine=true|false` to
   * machine_detection_url; with `machine_detection=hangup` it then ends a
   * call a machine answered.
   */
  async detectMachine(uuid: string, machine: boolean): Promise<PlivoWebhookResponse> {
    const call = this.call(uuid);
    if (!call.machineDetection || !call.machineDetectionUrl) throw new Error(`Call ${uuid} was not dialed with machine detection`);
    const result = await this.sendStatus(
      call.machineDetectionUrl,
      this.callbackFields(uuid, 'in-progress', { Event: 'MachineDetection', Machine: String(machine), IfMachine: call.machineDetection === 'hangup' ? 'hangup' : 'continue' }),
    );
    if (machine && call.machineDetection === 'hangup') await this.complete(uuid, { durationSeconds: 3 });
    return result;
  }

  /**
   * The call ends after a conversation: hangup_url gets `completed` with
   * Duration and TotalCost. `hangupSource` is `API Request` for a call hung
   * up through the API.
   */
  async complete(
    uuid: string,
    options: { durationSeconds?: number; totalCost?: string; hangupSource?: 'Callee' | 'API Request' } = {},
  ): Promise<PlivoWebhookResponse | null> {
    const duration = options.durationSeconds ?? 42;
    const totalCost = options.totalCost ?? '0.00850';
    const call = this.setCallStatus(uuid, { status: 'completed', endTime: new Date(), duration, totalCost, hangupCauseName: 'Normal Hangup' });
    return this.hangupCallback(call, 'completed', {
      Duration: String(duration),
      BillDuration: String(Math.ceil(duration / 60) * 60),
      TotalCost: totalCost,
      BillRate: '0.00850',
      HangupCause: 'NORMAL_CLEARING',
      HangupCauseName: 'Normal Hangup',
      HangupCauseCode: '4000',
      HangupSource: options.hangupSource ?? 'Callee',
      AnswerTime: plivoTime(call.answerTime ?? new Date()),
    });
  }

  /** The call ends unanswered: hangup_url gets `busy`, `no-answer`, `failed`, `timeout` or `cancel`. */
  async end(
    uuid: string,
    status: 'busy' | 'no-answer' | 'failed' | 'timeout' | 'cancel',
    extra: Record<string, string> = {},
  ): Promise<PlivoWebhookResponse | null> {
    const causes = { busy: 'Busy Line', 'no-answer': 'No Answer', failed: 'Unallocated Number', timeout: 'No Answer', cancel: 'Cancelled' };
    const call = this.setCallStatus(uuid, { status, endTime: new Date(), duration: 0, hangupCauseName: causes[status] });
    return this.hangupCallback(call, status, { Duration: '0', BillDuration: '0', TotalCost: '0.00000', HangupCauseName: causes[status], ...extra });
  }

  /** The session recording is ready: Plivo posts RecordUrl to the `<Record callbackUrl>` of the answer XML. */
  async recordingReady(uuid: string, options: { durationSeconds?: number } = {}): Promise<PlivoWebhookResponse> {
    const call = this.call(uuid);
    if (!call.recordCallbackUrl) throw new Error(`Call ${uuid} was not answered with a <Record callbackUrl>`);
    const recordingId = randomUUID();
    const durationSeconds = options.durationSeconds ?? call.duration ?? 42;
    this.recordings.set(recordingId, { callUuid: uuid, durationSeconds });
    const start = (call.answerTime ?? new Date()).getTime();
    return this.sendStatus(call.recordCallbackUrl, {
      CallUUID: uuid,
      RecordUrl: `${this.url}/v1/Account/${this.authId}/Recording/${recordingId}.wav`,
      RecordingID: recordingId,
      RecordingDuration: String(durationSeconds),
      RecordingDurationMs: String(durationSeconds * 1000),
      RecordingStartMs: String(start),
      RecordingEndMs: String(start + durationSeconds * 1000),
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
    let json: unknown = undefined;
    if (contentType.startsWith('application/json')) {
      try {
        json = JSON.parse(rawBody.toString('utf8'));
      } catch {
        json = undefined;
      }
    }
    const recorded: RecordedPlivoRequest = {
      method: request.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: request.headers,
      rawBody,
      json,
      at: new Date(),
    };
    this.requests.push(recorded);

    const failure = this.takeFailure(this.isDial(recorded));
    if (failure === 'timeout') return; // never answered; stop() closes the socket
    if (failure === 'reset') {
      // Plivo acted on the request, but the answer is lost on the way back.
      if (this.isDial(recorded) && this.authenticated(request) && this.validateDial(recorded) === null) this.createCall(recorded);
      request.socket.destroy();
      return;
    }
    if (failure) return this.fail(response, failure);

    if (!this.authenticated(request)) return plivoError(response, 401, 'Authentication failed');
    const match = /^\/v1\/Account\/([^/]+)\/(?:(Call)\/(?:([^/]+)\/)?|(Request)\/([^/]+)\/|Recording\/([^/]+)\.(wav|mp3))?$/.exec(url.pathname);
    if (!match || match[1] !== this.authId) return plivoError(response, 404, 'Resource not found');
    const [, , callPath, callUuid, requestPath, requestUuid, recordingId] = match;

    if (!callPath && !requestPath && !recordingId) {
      return recorded.method === 'GET' ? json200(response, this.accountResource()) : plivoError(response, 405, 'Method not allowed');
    }
    if (callPath && !callUuid) {
      if (recorded.method === 'POST') return this.dial(recorded, response);
      if (recorded.method === 'GET') return this.listCalls(recorded, response);
      return plivoError(response, 405, 'Method not allowed');
    }
    if (callUuid) return this.callResource(callUuid, recorded, response);
    if (requestUuid) {
      if (recorded.method !== 'DELETE') return plivoError(response, 405, 'Method not allowed');
      const call = this.calls.get(requestUuid);
      // A call request can be hung up until it is answered.
      if (!call || !['queued', 'fired', 'ringing'].includes(call.status)) return plivoError(response, 404, 'Request not found');
      this.cancel(call);
      response.writeHead(204).end();
      return;
    }
    const recording = this.recordings.get(recordingId!);
    if (!recording) return plivoError(response, 404, 'Recording not found');
    response.writeHead(200, { 'content-type': match[7] === 'wav' ? 'audio/wav' : 'audio/mpeg' });
    response.end(PlivoFake.recordingBytes(recording.durationSeconds));
  }

  private dial(request: RecordedPlivoRequest, response: ServerResponse): void {
    const problem = this.validateDial(request);
    if (problem) return plivoError(response, 400, problem);
    const call = this.createCall(request);
    response.writeHead(201, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ api_id: randomUUID(), message: call.status === 'queued' ? 'call queued' : 'call fired', request_uuid: call.requestUuid }));
  }

  /** The checks Plivo documents for "Make an outbound call". */
  private validateDial(request: RecordedPlivoRequest): string | null {
    if (!String(request.headers['content-type'] ?? '').startsWith('application/json') || typeof request.json !== 'object' || request.json === null) {
      return 'the request body must be JSON';
    }
    const body = request.json as Record<string, unknown>;
    for (const name of ['from', 'to', 'answer_url']) {
      if (typeof body[name] !== 'string' || body[name] === '') return `'${name}' parameter is missing`;
    }
    if (!PLIVO_NUMBER.test(body.to as string) && !String(body.to).startsWith('sip:')) return `invalid 'to' number: ${String(body.to)}`;
    if (!PLIVO_NUMBER.test(body.from as string)) return `invalid 'from' number: ${String(body.from)}`;
    for (const name of ['answer_url', 'ring_url', 'hangup_url', 'fallback_url', 'machine_detection_url']) {
      if (body[name] !== undefined && !(typeof body[name] === 'string' && HTTP_URL.test(body[name] as string))) return `invalid '${name}': ${String(body[name])}`;
    }
    for (const name of ['answer_method', 'ring_method', 'hangup_method', 'machine_detection_method']) {
      if (body[name] !== undefined && body[name] !== 'GET' && body[name] !== 'POST') return `'${name}' must be GET or POST`;
    }
    if (body.machine_detection !== undefined && body.machine_detection !== 'true' && body.machine_detection !== 'hangup') {
      return "'machine_detection' must be true or hangup";
    }
    const limit = body.time_limit;
    if (limit !== undefined && !(Number.isInteger(Number(limit)) && Number(limit) > 0)) return "'time_limit' must be a positive integer";
    return null;
  }

  private createCall(request: RecordedPlivoRequest): FakePlivoCall {
    const body = request.json as Record<string, string | number | undefined>;
    const requestUuid = randomUUID();
    const call: FakePlivoCall = {
      requestUuid,
      from: String(body.from),
      to: String(body.to),
      status: this.queueCalls ? 'queued' : 'fired',
      answerUrl: String(body.answer_url),
      ringUrl: body.ring_url === undefined ? null : String(body.ring_url),
      hangupUrl: body.hangup_url === undefined ? null : String(body.hangup_url),
      machineDetection: body.machine_detection === undefined ? null : (String(body.machine_detection) as 'true' | 'hangup'),
      machineDetectionUrl: body.machine_detection_url === undefined ? null : String(body.machine_detection_url),
      timeLimit: body.time_limit === undefined ? null : Number(body.time_limit),
      dateCreated: new Date(),
      answerTime: null,
      endTime: null,
      duration: null,
      totalCost: null,
      hangupCauseName: null,
      recordCallbackUrl: null,
    };
    this.calls.set(requestUuid, call);
    return call;
  }

  /** GET ?status=queued | ?status=live | the detail record; DELETE hangs up a live or queued call. */
  private callResource(uuid: string, request: RecordedPlivoRequest, response: ServerResponse): void {
    const call = this.calls.get(uuid);
    const status = request.query.get('status');
    if (request.method === 'DELETE') {
      if (!call || !['queued', 'fired', 'ringing', 'in-progress'].includes(call.status)) return plivoError(response, 404, 'Call not found');
      if (call.status === 'in-progress') {
        // Billed as any call that talked: what `setCallStatus` set, else the time since the answer.
        const talked = Math.round((Date.now() - (call.answerTime ?? new Date()).getTime()) / 1000);
        void this.complete(uuid, { durationSeconds: call.duration ?? talked, totalCost: call.totalCost ?? undefined, hangupSource: 'API Request' }).catch(() => undefined);
      } else {
        this.cancel(call);
      }
      response.writeHead(204).end();
      return;
    }
    if (request.method !== 'GET') return plivoError(response, 405, 'Method not allowed');
    if (status === 'queued') {
      if (!call || call.status !== 'queued') return plivoError(response, 404, 'Call not found');
      return json200(response, { api_id: randomUUID(), call_status: 'queued', call_uuid: uuid, request_uuid: uuid, direction: 'outbound', from: call.from, to: call.to, caller_name: '' });
    }
    if (status === 'live') {
      if (!call || (call.status !== 'ringing' && call.status !== 'in-progress')) return plivoError(response, 404, 'Call not found');
      return json200(response, {
        api_id: randomUUID(),
        call_status: call.status,
        call_uuid: uuid,
        request_uuid: uuid,
        direction: 'outbound',
        from: call.from,
        to: call.to,
        caller_name: '',
        session_start: plivoTime(call.dateCreated),
      });
    }
    if (!call || !ENDED.includes(call.status)) return plivoError(response, 404, 'Call not found');
    return json200(response, { api_id: randomUUID(), ...this.callDetailRecord(call) });
  }

  /**
   * GET /Call/ lists calls. `status=live` and `status=queued` answer the
   * UUIDs of live (ringing, in progress) or queued calls, `{ api_id, calls }`;
   * live calls filter by call_direction, from_number and to_number. Without a
   * status, the detail records of ended calls, newest first, `{ api_id, meta,
   * objects }`, filtered by call_direction, from_number and to_number (the
   * exact number or a prefix) and end_time with __gt/__gte/__lt/__lte
   * (`YYYY-MM-DD HH:MM[:ss[.uuuuuu]]`, UTC): the last 7 days without it, 30
   * days from a single bound, and a wider range is refused. `limit` (at most
   * 20, the default) and `offset` page all three; `meta.next` is the next
   * page's path, or null.
   */
  private listCalls(request: RecordedPlivoRequest, response: ServerResponse): void {
    const query = request.query;
    const limit = query.has('limit') ? Number(query.get('limit')) : 20;
    const offset = query.has('offset') ? Number(query.get('offset')) : 0;
    if (!Number.isInteger(limit) || limit < 1 || limit > 20) return plivoError(response, 400, 'limit must be an integer between 1 and 20');
    if (!Number.isInteger(offset) || offset < 0) return plivoError(response, 400, 'offset must be a non-negative integer');
    const byNumbers = (call: FakePlivoCall) =>
      ['outbound', null].includes(query.get('call_direction')) &&
      call.from.startsWith(query.get('from_number') ?? '') &&
      call.to.startsWith(query.get('to_number') ?? '');
    const status = query.get('status');
    if (status === 'live' || status === 'queued') {
      const states = status === 'live' ? ['ringing', 'in-progress'] : ['queued'];
      const calls = [...this.calls.values()].filter((call) => states.includes(call.status) && (status === 'queued' || byNumbers(call)));
      return json200(response, { api_id: randomUUID(), calls: calls.slice(offset, offset + limit).map((call) => call.requestUuid) });
    }
    if (status !== null) return plivoError(response, 400, `invalid status: ${status}`);

    const bounds: Partial<Record<'gt' | 'gte' | 'lt' | 'lte' | 'eq', number>> = {};
    for (const [name, bound] of [['end_time', 'eq'], ['end_time__gt', 'gt'], ['end_time__gte', 'gte'], ['end_time__lt', 'lt'], ['end_time__lte', 'lte']] as const) {
      const value = query.get(name);
      if (value === null) continue;
      const at = parsePlivoFilterTime(value);
      if (at === null) return plivoError(response, 400, `${name} must be a time as YYYY-MM-DD HH:MM[:ss[.uuuuuu]]: ${value}`);
      bounds[bound] = at;
    }
    const lower = bounds.gt ?? bounds.gte;
    const upper = bounds.lt ?? bounds.lte;
    if (lower !== undefined && upper !== undefined && upper - lower > 30 * DAY_MS) return plivoError(response, 400, 'end_time range cannot exceed 30 days');
    const from = lower ?? (upper !== undefined ? upper - 30 * DAY_MS : Date.now() - 7 * DAY_MS);
    const to = upper ?? (lower !== undefined ? lower + 30 * DAY_MS : Infinity);
    const ended = [...this.calls.values()]
      .filter((call) => ENDED.includes(call.status) && call.endTime !== null && byNumbers(call))
      .filter((call) => {
        const end = call.endTime!.getTime();
        if (bounds.eq !== undefined && end !== bounds.eq) return false;
        return (bounds.gt === undefined ? end >= from : end > from) && (bounds.lt === undefined ? end <= to : end < to);
      })
      .sort((a, b) => b.endTime!.getTime() - a.endTime!.getTime());
    const page = (at: number) => {
      const paging = new URLSearchParams(query);
      paging.set('limit', String(limit));
      paging.set('offset', String(at));
      return `${request.path}?${paging}`;
    };
    return json200(response, {
      api_id: randomUUID(),
      meta: {
        limit,
        offset,
        total_count: ended.length,
        next: offset + limit < ended.length ? page(offset + limit) : null,
        previous: offset > 0 ? page(Math.max(0, offset - limit)) : null,
      },
      objects: ended.slice(offset, offset + limit).map((call) => this.callDetailRecord(call)),
    });
  }

  /** An ended call's detail record, as `GET /Call/{uuid}/` and the call list show it. */
  private callDetailRecord(call: FakePlivoCall): Record<string, unknown> {
    const uuid = call.requestUuid;
    return {
      call_uuid: uuid,
      call_direction: 'outbound',
      from_number: call.from,
      to_number: call.to,
      initiation_time: plivoTime(call.dateCreated),
      answer_time: call.answerTime ? plivoTime(call.answerTime) : null,
      end_time: call.endTime ? plivoTime(call.endTime) : null,
      call_duration: call.duration ?? 0,
      bill_duration: call.duration ?? 0,
      billed_duration: call.duration ? Math.ceil(call.duration / 60) * 60 : 0,
      total_amount: call.totalCost ?? '0.00000',
      total_rate: '0.00850',
      hangup_cause_name: call.hangupCauseName,
      hangup_source: 'Callee',
      parent_call_uuid: null,
      resource_uri: `/v1/Account/${this.authId}/Call/${uuid}/`,
    };
  }

  private cancel(call: FakePlivoCall): void {
    Object.assign(call, { status: 'cancel', endTime: new Date(), duration: 0, hangupCauseName: 'Cancelled' });
    void this.hangupCallback(call, 'cancel', { Duration: '0', BillDuration: '0', TotalCost: '0.00000', HangupCauseName: 'Cancelled', HangupSource: 'API Request' }).catch(
      () => undefined,
    );
  }

  private async hangupCallback(call: FakePlivoCall, status: string, extra: Record<string, string>): Promise<PlivoWebhookResponse | null> {
    if (!call.hangupUrl) return null;
    return this.sendStatus(
      call.hangupUrl,
      this.callbackFields(call.requestUuid, status, { Event: 'Hangup', StartTime: plivoTime(call.dateCreated), EndTime: plivoTime(call.endTime ?? new Date()), ...extra }),
    );
  }

  private authenticated(request: IncomingMessage): boolean {
    const basic = basicCredentials(request);
    return basic !== null && basic.user === this.authId && basic.password === this.authToken;
  }

  private isDial(request: RecordedPlivoRequest): boolean {
    return request.method === 'POST' && /^\/v1\/Account\/[^/]+\/Call\/$/.test(request.path);
  }

  private fail(response: ServerResponse, failure: Exclude<PlivoFailure, 'reset' | 'timeout'>): void {
    if (failure === 'throttle') {
      response.setHeader('retry-after', '2');
      return plivoError(response, 429, 'Too many requests');
    }
    if (failure === 'server_error') return plivoError(response, 500, 'Internal server error');
    if (failure === 'unavailable') return plivoError(response, 503, 'Service unavailable');
    return plivoError(response, failure.status, failure.error);
  }

  private accountResource(): Record<string, unknown> {
    return {
      api_id: randomUUID(),
      account_type: 'standard',
      auth_id: this.authId,
      billing_mode: 'prepaid',
      cash_credits: '10.00000',
      name: 'Fake account',
      resource_uri: `/v1/Account/${this.authId}/`,
    };
  }
}

/** A call as the fake keeps it: what the dial request asked for, and where the call is now. */
export interface FakePlivoCall {
  /** Also the call's CallUUID. */
  requestUuid: string;
  from: string;
  to: string;
  /** `fired`: dialing, not ringing yet. */
  status: 'queued' | 'fired' | 'ringing' | 'in-progress' | 'completed' | 'busy' | 'no-answer' | 'failed' | 'timeout' | 'cancel';
  answerUrl: string;
  ringUrl: string | null;
  hangupUrl: string | null;
  machineDetection: 'true' | 'hangup' | null;
  machineDetectionUrl: string | null;
  timeLimit: number | null;
  dateCreated: Date;
  answerTime: Date | null;
  endTime: Date | null;
  duration: number | null;
  totalCost: string | null;
  hangupCauseName: string | null;
  /** From the `<Record callbackUrl>` of our answer XML. */
  recordCallbackUrl: string | null;
}

export type PlivoFailure =
  /** 429: rate limited, nothing placed. */
  | 'throttle'
  /** 500 server error. */
  | 'server_error'
  /** 503. */
  | 'unavailable'
  /** The request is acted on (a dial places the call), then the connection drops unanswered. */
  | 'reset'
  /** No answer at all, until the client gives up. */
  | 'timeout'
  /** Any answer in Plivo's error shape, e.g. `{ status: 400, error: "invalid 'to' number" }`. */
  | { status: number; error: string };

export interface RecordedPlivoRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  rawBody: Buffer;
  /** The parsed JSON body, when it was JSON. */
  json: unknown;
  at: Date;
}

export type FakePlivoWebhookRequest = LoopbackWebhook;
export type PlivoWebhookResponse = LoopbackWebhookAnswer;

export type SentPlivoWebhook = SentFormWebhook;

export type PlivoWebhookFields = FormFields;

/** Country code and number, no "+", as Plivo's reference writes them. */
const PLIVO_NUMBER = /^[1-9]\d{7,14}$/;
const HTTP_URL = /^https?:\/\/[^\s/]+/;
const ENDED = ['completed', 'busy', 'no-answer', 'failed', 'timeout', 'cancel'];
const DAY_MS = 24 * 3600 * 1000;

function group(entries: Array<[string, string]>): Map<string, string[]> {
  const byName = new Map<string, string[]>();
  for (const [name, value] of entries) byName.set(name, [...(byName.get(name) ?? []), value]);
  return byName;
}

/** Plivo writes times as `yyyy-MM-dd HH:mm:ss` (UTC for a default account). */
function plivoTime(date: Date): string {
  return date.toISOString().slice(0, 19).replace('T', ' ');
}

/** A time filter as Plivo takes it, `YYYY-MM-DD HH:MM[:ss[.uuuuuu]]` in UTC; null when malformed. */
function parsePlivoFilterTime(value: string): number | null {
  const match = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2})(:\d{2}(\.\d{1,6})?)?$/.exec(value);
  if (!match) return null;
  const at = Date.parse(`${match[1]}T${match[2]}${match[3] ? match[3].slice(0, 7) : ':00'}Z`);
  return Number.isNaN(at) ? null : at;
}

function unescapeXml(value: string): string {
  return value.replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

function json200(response: ServerResponse, body: unknown): void {
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

function plivoError(response: ServerResponse, status: number, error: string): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ api_id: randomUUID(), error }));
}
