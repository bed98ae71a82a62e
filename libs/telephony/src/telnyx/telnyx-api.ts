import { CARRIER_REQUEST_TIMEOUT_MS, carrierHttp } from '../carrier-http';
import { carrierNetworkFailure } from '../carrier-network-failure';

export interface TelnyxResponse {
  status: number;
  headers: Headers;
  /** The parsed JSON body, or null when there was none (or it was not JSON). */
  body: unknown;
}

/**
 * A thin client of the Telnyx v2 REST API: Bearer auth, JSON both ways, a
 * timeout on every request. A request that never reached Telnyx (connection
 * refused, unknown host) is a `CarrierError` that says so; one that failed
 * after it was sent (reset, timeout) is left as an ordinary error, because
 * then nobody knows whether Telnyx acted on it.
 */
export class TelnyxApi {
  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string,
  ) {}

  async request(method: 'GET' | 'POST', path: string, body?: Record<string, unknown>): Promise<TelnyxResponse> {
    try {
      const response = await carrierHttp('Telnyx', `${this.baseUrl.replace(/\/+$/, '')}${path}`, {
        method,
        authorization: `Bearer ${this.apiKey}`,
        json: body,
        timeoutMs: CARRIER_REQUEST_TIMEOUT_MS,
      });
      return { status: response.status, headers: response.headers, body: response.json };
    } catch (error) {
      throw carrierNetworkFailure(`Telnyx ${method} ${path}`, error);
    }
  }
}
