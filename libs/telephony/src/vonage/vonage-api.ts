import { CARRIER_DOWNLOAD_TIMEOUT_MS, CARRIER_REQUEST_TIMEOUT_MS, carrierHttp, CarrierHttpResponse, pathForMessage } from '../carrier-http';
import { carrierNetworkFailure } from '../carrier-network-failure';
import { VonageCredentials } from './vonage-credentials';
import { signVonageApplicationJwt } from './vonage-jwt';

export interface VonageResponse {
  status: number;
  headers: Headers;
  /** The parsed JSON body, or null. */
  body: unknown;
}

/**
 * A thin client of the Vonage Voice API: a fresh RS256 application JWT per
 * request, JSON both ways, a timeout on every request. Like the Telnyx
 * client, a request that never left is a not-processed `CarrierError`, one
 * that failed afterwards an ordinary (outcome unknown) error.
 */
export class VonageApi {
  constructor(
    private readonly baseUrl: string,
    private readonly credentials: VonageCredentials,
  ) {}

  async request(method: 'GET' | 'POST' | 'PUT', path: string, body?: Record<string, unknown>): Promise<VonageResponse> {
    const response = await this.send(`${this.baseUrl.replace(/\/+$/, '')}${path}`, method, body, CARRIER_REQUEST_TIMEOUT_MS);
    return { status: response.status, headers: response.headers, body: response.json };
  }

  /** GETs a file (a recording) with the application JWT, following the redirects `followRedirect` allows. */
  async download(url: string, followRedirect: (target: URL) => boolean): Promise<{ status: number; contentType: string | null; body: Buffer }> {
    const response = await this.send(url, 'GET', undefined, CARRIER_DOWNLOAD_TIMEOUT_MS, followRedirect);
    return { status: response.status, contentType: response.headers.get('content-type'), body: response.bytes };
  }

  private async send(
    url: string,
    method: string,
    body: Record<string, unknown> | undefined,
    timeoutMs: number,
    followRedirect?: (target: URL) => boolean,
  ): Promise<CarrierHttpResponse> {
    try {
      return await carrierHttp('Vonage', url, {
        method,
        authorization: `Bearer ${signVonageApplicationJwt(this.credentials.applicationId, this.credentials.privateKey)}`,
        json: body,
        timeoutMs,
        followRedirect,
        trustedOrigins: [new URL(this.baseUrl).origin],
      });
    } catch (error) {
      throw carrierNetworkFailure(`Vonage ${method} ${pathForMessage(new URL(url))}`, error);
    }
  }
}
