import { CarrierError } from '../carrier-error';

/** How long one Telnyx REST request may take before we give up on its answer. */
export const TELNYX_REQUEST_TIMEOUT_MS = 15_000;

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
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl.replace(/\/+$/, '')}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.apiKey}`,
          accept: 'application/json',
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        ...(body ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(TELNYX_REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      throw networkFailure(`Telnyx ${method} ${path}`, error);
    }
    const text = await response.text();
    let parsed: unknown = null;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = null;
      }
    }
    return { status: response.status, headers: response.headers, body: parsed };
  }
}

const NEVER_SENT = ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN'];

/** Classifies a failed `fetch`: refused before sending means not processed; anything else is unknown. */
export function networkFailure(what: string, error: unknown): Error {
  const cause = (error as { cause?: { code?: string } }).cause;
  const code = cause?.code ?? (error as { name?: string }).name ?? 'network_error';
  if (NEVER_SENT.includes(code)) {
    return new CarrierError(`${what}: carrier unreachable (${code})`, {
      reason: 'carrier_unreachable',
      permanent: false,
      notProcessed: true,
      carrierCode: code,
    });
  }
  return new Error(`${what}: no answer (${code}); the carrier may or may not have acted on it`, { cause: error });
}
