/** Requests to Twilio give up after this long; the outcome of a dial is then unknown. */
export const TWILIO_REQUEST_TIMEOUT_MS = 15_000;

export interface TwilioHttpResponse {
  status: number;
  headers: Headers;
  /** The parsed JSON body, or null when the body was not JSON. */
  json: unknown;
  bytes: Buffer;
}

/**
 * A request that got no HTTP answer. `reachedTwilio` is false only when the
 * connection was never made (refused, unknown host), so Twilio cannot have
 * acted on it; after a timeout or a reset it may have.
 */
export class TwilioRequestFailed extends Error {
  constructor(
    message: string,
    readonly reachedTwilio: boolean,
  ) {
    super(message);
    this.name = 'TwilioRequestFailed';
  }
}

const NEVER_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

export async function twilioHttp(
  url: string,
  init: { method: string; authorization?: string; form?: URLSearchParams; timeoutMs: number; followRedirects?: boolean },
): Promise<TwilioHttpResponse> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (init.authorization) headers.authorization = init.authorization;
  if (init.form) headers['content-type'] = 'application/x-www-form-urlencoded';
  let response: Response;
  let bytes: Buffer;
  try {
    response = await fetch(url, {
      method: init.method,
      headers,
      body: init.form ? init.form.toString() : undefined,
      signal: AbortSignal.timeout(init.timeoutMs),
      // API calls never redirect; recordings do (to storage), and fetch drops the auth header when it leaves the origin.
      redirect: init.followRedirects ? 'follow' : 'manual',
    });
    bytes = Buffer.from(await response.arrayBuffer());
  } catch (error) {
    const code = errorCode(error);
    const timedOut = (error as Error)?.name === 'TimeoutError';
    const what = timedOut ? `no answer within ${init.timeoutMs} ms` : code ?? (error as Error)?.message ?? String(error);
    throw new TwilioRequestFailed(`Twilio request ${init.method} ${new URL(url).pathname} failed: ${what}`, !(code && NEVER_CONNECTED.has(code)));
  }
  return { status: response.status, headers: response.headers, json: parseJson(bytes), bytes };
}

function parseJson(bytes: Buffer): unknown {
  if (bytes.length === 0) return null;
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return null;
  }
}

export function twilioBasicAuthorization(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
}

/** Retry-After as milliseconds (seconds or an HTTP date), when the answer carried one. */
export function twilioRetryAfterMs(headers: Headers, nowMs = Date.now()): number | undefined {
  const value = headers.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

function errorCode(error: unknown): string | undefined {
  // undici wraps the socket error: TypeError('fetch failed', { cause }), the cause sometimes an AggregateError.
  const cause = (error as { cause?: unknown })?.cause as { code?: unknown; errors?: Array<{ code?: unknown }> } | undefined;
  if (typeof cause?.code === 'string') return cause.code;
  const nested = cause?.errors?.find((inner) => typeof inner?.code === 'string');
  return nested ? (nested.code as string) : undefined;
}
