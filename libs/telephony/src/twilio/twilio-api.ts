import { basicAuthorization, CARRIER_DOWNLOAD_TIMEOUT_MS, carrierHostCheck, carrierHttp, CarrierHttpResponse, DownloadRefused, isPublicHttpsUrl } from '../carrier-http';
import { TwilioCredentials } from './twilio-credentials';
import { TwilioErrorBody } from './twilio-errors';
import { TwilioCallResource } from './twilio-status';

/** A non-2xx answer from Twilio's REST API. */
export class TwilioApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: TwilioErrorBody | null,
    readonly headers: Headers,
  ) {
    super(`Twilio answered ${status}${body?.code ? ` (error ${body.code})` : ''}: ${body?.message ?? 'no message'}`);
    this.name = 'TwilioApiError';
  }
}

/** One page of a call list, as Twilio answers it (the fields we read). */
export interface TwilioCallPage {
  calls?: TwilioCallResource[];
  /** The next page's path and query, or null on the last page. */
  next_page_uri?: string | null;
  page?: number;
  page_size?: number;
}

/**
 * The few Twilio REST endpoints we use (API version 2010-04-01), with HTTP
 * Basic auth: the API key when the credentials have one, else Account SID and
 * Auth Token. Bodies are `application/x-www-form-urlencoded`; answers JSON.
 */
export class TwilioApi {
  constructor(
    private readonly baseUrl: string,
    private readonly timeoutMs: () => number,
  ) {}

  /** POST /2010-04-01/Accounts/{AccountSid}/Calls.json */
  async createCall(credentials: TwilioCredentials, form: URLSearchParams): Promise<TwilioCallResource> {
    return (await this.send('POST', `${this.accountPath(credentials)}/Calls.json`, credentials, form)) as TwilioCallResource;
  }

  /** GET /2010-04-01/Accounts/{AccountSid}/Calls/{CallSid}.json */
  async fetchCall(credentials: TwilioCredentials, callSid: string): Promise<TwilioCallResource> {
    return (await this.send('GET', `${this.accountPath(credentials)}/Calls/${encodeURIComponent(callSid)}.json`, credentials)) as TwilioCallResource;
  }

  /**
   * GET /2010-04-01/Accounts/{AccountSid}/Calls.json with filters (`To`,
   * `From`, `Status`, `StartTime>`, `PageSize`, ...): one page of calls.
   */
  async listCalls(credentials: TwilioCredentials, filters: URLSearchParams): Promise<TwilioCallPage> {
    return (await this.send('GET', `${this.accountPath(credentials)}/Calls.json?${filters.toString()}`, credentials)) as TwilioCallPage;
  }

  /** The page a list answer's `next_page_uri` names (a path under the API's origin, filters included). */
  async nextCallPage(credentials: TwilioCredentials, nextPageUri: string): Promise<TwilioCallPage> {
    if (!nextPageUri.startsWith(`${this.accountPath(credentials)}/Calls.json?`)) throw new Error(`Not a page of this account's calls: ${nextPageUri}`);
    return (await this.send('GET', nextPageUri, credentials)) as TwilioCallPage;
  }

  /** POST /2010-04-01/Accounts/{AccountSid}/Calls/{CallSid}.json (update: `Status=canceled|completed`, ...) */
  async updateCall(credentials: TwilioCredentials, callSid: string, form: URLSearchParams): Promise<TwilioCallResource> {
    return (await this.send(
      'POST',
      `${this.accountPath(credentials)}/Calls/${encodeURIComponent(callSid)}.json`,
      credentials,
      form,
    )) as TwilioCallResource;
  }

  /** GET /2010-04-01/Accounts/{AccountSid}.json */
  async fetchAccount(credentials: TwilioCredentials): Promise<{ sid: string; status: string }> {
    return (await this.send('GET', `${this.accountPath(credentials)}.json`, credentials)) as { sid: string; status: string };
  }

  /**
   * Downloads a recording from Twilio itself only (this API's origin, or an
   * https *.twilio.com host): never from, nor with credentials to, another
   * host a callback named.
   */
  async download(url: string, credentials: TwilioCredentials): Promise<{ contentType: string; body: Buffer }> {
    const target = new URL(url);
    // A recording callback can name any URL: fetching one elsewhere would let a caller point the dialer at internal hosts.
    if (!this.isTwilio(target)) throw new DownloadRefused(`Refusing to fetch a recording from ${target.origin}: not a Twilio host`);
    const response = await carrierHttp('Twilio', url, {
      method: 'GET',
      authorization: this.authorization(credentials),
      timeoutMs: CARRIER_DOWNLOAD_TIMEOUT_MS,
      // Twilio hands the file over to its storage; never to an internal address.
      followRedirect: (next) => this.isTwilio(next) || isPublicHttpsUrl(next),
      trustedOrigins: [new URL(this.baseUrl).origin],
    });
    if (response.status < 200 || response.status >= 300) throw new TwilioApiError(response.status, errorBody(response), response.headers);
    return { contentType: response.headers.get('content-type') ?? 'audio/wav', body: response.bytes };
  }

  private async send(method: string, path: string, credentials: TwilioCredentials, form?: URLSearchParams): Promise<unknown> {
    const response = await carrierHttp('Twilio', `${this.baseUrl.replace(/\/+$/, '')}${path}`, {
      method,
      authorization: this.authorization(credentials),
      form,
      timeoutMs: this.timeoutMs(),
    });
    if (response.status < 200 || response.status >= 300) throw new TwilioApiError(response.status, errorBody(response), response.headers);
    return response.json;
  }

  private accountPath(credentials: TwilioCredentials): string {
    return `/2010-04-01/Accounts/${encodeURIComponent(credentials.accountSid)}`;
  }

  private authorization(credentials: TwilioCredentials): string {
    return credentials.apiKey
      ? basicAuthorization(credentials.apiKey.sid, credentials.apiKey.secret)
      : basicAuthorization(credentials.accountSid, credentials.authToken);
  }

  private isTwilio(target: URL): boolean {
    return carrierHostCheck(this.baseUrl, /(^|\.)twilio\.com$/)(target);
  }
}

function errorBody(response: CarrierHttpResponse): TwilioErrorBody | null {
  const json = response.json;
  return json && typeof json === 'object' ? (json as TwilioErrorBody) : null;
}
