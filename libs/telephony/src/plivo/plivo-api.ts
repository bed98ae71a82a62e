import { basicAuthorization, CARRIER_DOWNLOAD_TIMEOUT_MS, carrierHostCheck, carrierHttp, CarrierHttpResponse, DownloadRefused, isPublicHttpsUrl } from '../carrier-http';
import { PlivoCredentials } from './plivo-credentials';
import { PlivoDialBody } from './plivo-dial';
import { PlivoErrorBody } from './plivo-errors';
import { PlivoCallRecord, PlivoLiveCall } from './plivo-status';

/** A non-2xx answer from Plivo's REST API. */
export class PlivoApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: PlivoErrorBody | null,
    readonly headers: Headers,
  ) {
    super(`Plivo answered ${status}: ${typeof body?.error === 'string' ? body.error : body?.message ?? 'no message'}`);
    this.name = 'PlivoApiError';
  }
}

/** One page of call detail records, as Plivo answers it (the fields we read). */
export interface PlivoCallRecordPage {
  meta?: { limit?: number; offset?: number; next?: string | null; total_count?: number };
  objects?: PlivoCallRecord[];
}

/**
 * The Plivo Voice API endpoints we use (`/v1/Account/{auth_id}/...`), with
 * HTTP Basic auth (Auth ID, Auth Token) and JSON bodies, as Plivo's SDKs send.
 */
export class PlivoApi {
  constructor(
    private readonly baseUrl: string,
    private readonly timeoutMs: () => number,
  ) {}

  /** POST /Call/ → `{ api_id, message: "call fired" | "call queued", request_uuid }` */
  async makeCall(credentials: PlivoCredentials, body: PlivoDialBody): Promise<{ request_uuid?: unknown; message?: string }> {
    return (await this.send('POST', credentials, '/Call/', body)) as { request_uuid?: unknown; message?: string };
  }

  /** GET /Call/{uuid}/?status=queued: a call still waiting for its turn (Plivo paces calls per second); null when none. */
  async queuedCall(credentials: PlivoCredentials, uuid: string): Promise<PlivoLiveCall | null> {
    return this.orNull(() => this.send('GET', credentials, `/Call/${encodeURIComponent(uuid)}/?status=queued`) as Promise<PlivoLiveCall>);
  }

  /** GET /Call/{uuid}/?status=live: a call ringing or in progress; null when none. */
  async liveCall(credentials: PlivoCredentials, uuid: string): Promise<PlivoLiveCall | null> {
    return this.orNull(() => this.send('GET', credentials, `/Call/${encodeURIComponent(uuid)}/?status=live`) as Promise<PlivoLiveCall>);
  }

  /** GET /Call/{uuid}/: the detail record of an ended call; null when there is none (yet). */
  async callRecord(credentials: PlivoCredentials, uuid: string): Promise<PlivoCallRecord | null> {
    return this.orNull(() => this.send('GET', credentials, `/Call/${encodeURIComponent(uuid)}/`) as Promise<PlivoCallRecord>);
  }

  /** GET /Call/?status=queued&limit=&offset=: UUIDs of calls waiting for their turn (`{ api_id, calls: [...] }`). */
  async queuedCallIds(credentials: PlivoCredentials, page: { limit: number; offset: number }): Promise<string[]> {
    const query = new URLSearchParams({ status: 'queued', limit: String(page.limit), offset: String(page.offset) });
    return callIds(await this.send('GET', credentials, `/Call/?${query}`));
  }

  /**
   * GET /Call/?status=live with `call_direction`, `from_number` and
   * `to_number` filters, `limit` and `offset`: UUIDs of live calls
   * (`{ api_id, calls: [...] }`).
   */
  async liveCallIds(
    credentials: PlivoCredentials,
    filters: { fromNumber: string; toNumber: string },
    page: { limit: number; offset: number },
  ): Promise<string[]> {
    const query = new URLSearchParams({
      status: 'live',
      call_direction: 'outbound',
      from_number: filters.fromNumber,
      to_number: filters.toNumber,
      limit: String(page.limit),
      offset: String(page.offset),
    });
    return callIds(await this.send('GET', credentials, `/Call/?${query}`));
  }

  /**
   * GET /Call/ with filters (`from_number`, `to_number`, `call_direction`,
   * `end_time__gte`, ..., `limit` at most 20, `offset`): one page of detail
   * records of ended calls (`{ api_id, meta, objects }`).
   */
  async listCallRecords(credentials: PlivoCredentials, filters: URLSearchParams): Promise<PlivoCallRecordPage> {
    return (await this.send('GET', credentials, `/Call/?${filters}`)) as PlivoCallRecordPage;
  }

  /** DELETE /Request/{request_uuid}/: hangs up a call request that is not answered yet. False when there is none. */
  async cancelRequest(credentials: PlivoCredentials, requestUuid: string): Promise<boolean> {
    return (await this.orNull(() => this.send('DELETE', credentials, `/Request/${encodeURIComponent(requestUuid)}/`).then(() => true))) ?? false;
  }

  /** DELETE /Call/{uuid}/: hangs up a call, or cancels a queued one. False when there is none. */
  async hangupCall(credentials: PlivoCredentials, uuid: string): Promise<boolean> {
    return (await this.orNull(() => this.send('DELETE', credentials, `/Call/${encodeURIComponent(uuid)}/`).then(() => true))) ?? false;
  }

  /** GET /Call/?limit=1: the cheapest request that proves the credentials (main account and subaccount alike). */
  async listOneCall(credentials: PlivoCredentials): Promise<void> {
    await this.send('GET', credentials, '/Call/?limit=1');
  }

  /**
   * Downloads a recording from Plivo itself only (this API's origin, or an
   * https *.plivo.com host such as media.plivo.com): never from, nor with
   * credentials to, another host a callback named.
   */
  async download(url: string, credentials: PlivoCredentials): Promise<{ contentType: string; body: Buffer }> {
    const target = new URL(url);
    // A recording callback can name any URL: fetching one elsewhere would let a caller point the dialer at internal hosts.
    if (!this.isPlivo(target)) throw new DownloadRefused(`Refusing to fetch a recording from ${target.origin}: not a Plivo host`);
    const response = await carrierHttp('Plivo', url, {
      method: 'GET',
      authorization: basicAuthorization(credentials.authId, credentials.authToken),
      timeoutMs: CARRIER_DOWNLOAD_TIMEOUT_MS,
      // Plivo may hand the file over to its storage; never to an internal address.
      followRedirect: (next) => this.isPlivo(next) || isPublicHttpsUrl(next),
      trustedOrigins: [new URL(this.baseUrl).origin],
    });
    if (response.status < 200 || response.status >= 300) throw new PlivoApiError(response.status, errorBody(response), response.headers);
    return { contentType: response.headers.get('content-type') ?? contentTypeFor(target.pathname), body: response.bytes };
  }

  private async send(method: string, credentials: PlivoCredentials, path: string, json?: unknown): Promise<unknown> {
    const url = `${this.baseUrl.replace(/\/+$/, '')}/v1/Account/${encodeURIComponent(credentials.authId)}${path}`;
    const response = await carrierHttp('Plivo', url, {
      method,
      authorization: basicAuthorization(credentials.authId, credentials.authToken),
      json,
      timeoutMs: this.timeoutMs(),
    });
    if (response.status < 200 || response.status >= 300) throw new PlivoApiError(response.status, errorBody(response), response.headers);
    return response.json;
  }

  private async orNull<T>(request: () => Promise<T>): Promise<T | null> {
    try {
      return await request();
    } catch (error) {
      if (error instanceof PlivoApiError && error.status === 404) return null;
      throw error;
    }
  }

  private isPlivo(target: URL): boolean {
    return carrierHostCheck(this.baseUrl, /(^|\.)plivo\.com$/)(target);
  }
}

function callIds(body: unknown): string[] {
  const calls = (body as { calls?: unknown } | null)?.calls;
  return Array.isArray(calls) ? calls.filter((id): id is string => typeof id === 'string' && id !== '') : [];
}

function errorBody(response: CarrierHttpResponse): PlivoErrorBody | null {
  const json = response.json;
  return json && typeof json === 'object' ? (json as PlivoErrorBody) : null;
}

function contentTypeFor(path: string): string {
  return path.endsWith('.mp3') ? 'audio/mpeg' : 'audio/wav';
}
