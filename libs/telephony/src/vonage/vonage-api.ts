import { CarrierError } from '../carrier-error';
import { VonageCredentials } from './vonage-credentials';
import { signVonageApplicationJwt } from './vonage-jwt';

/** How long one Vonage REST request may take before we give up on its answer. */
export const VONAGE_REQUEST_TIMEOUT_MS = 15_000;
const DOWNLOAD_TIMEOUT_MS = 60_000;

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
    const response = await this.send(`${this.baseUrl.replace(/\/+$/, '')}${path}`, method, body, VONAGE_REQUEST_TIMEOUT_MS);
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

  /** GETs a file (a recording) with the application JWT. */
  async download(url: string): Promise<{ status: number; contentType: string | null; body: Buffer }> {
    const response = await this.send(url, 'GET', undefined, DOWNLOAD_TIMEOUT_MS);
    return { status: response.status, contentType: response.headers.get('content-type'), body: Buffer.from(await response.arrayBuffer()) };
  }

  private async send(url: string, method: string, body: Record<string, unknown> | undefined, timeoutMs: number): Promise<Response> {
    try {
      return await fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${signVonageApplicationJwt(this.credentials.applicationId, this.credentials.privateKey)}`,
          accept: 'application/json',
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        ...(body ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw networkFailure(`Vonage ${method} ${new URL(url).pathname}`, error);
    }
  }
}

const NEVER_SENT = ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN'];

function networkFailure(what: string, error: unknown): Error {
  const code = (error as { cause?: { code?: string } }).cause?.code ?? (error as { name?: string }).name ?? 'network_error';
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
