import { IncomingMessage, ServerResponse } from 'node:http';
import { LoopbackHttpFake, LoopbackWebhook, readRequestBody } from './loopback-http-fake';

/** A signed webhook as a JSON-posting carrier (Telnyx, Vonage) sends it. */
export interface SignedWebhook extends LoopbackWebhook {
  method: 'POST';
}

export interface DeliveryResult {
  status: number;
  body: string;
}

/** A request to the fake's JSON API, as received. */
export interface RecordedJsonRequest {
  method: string;
  /** The URL path, percent-decoded. */
  path: string;
  query: Record<string, string>;
  headers: IncomingMessage['headers'];
  rawBody: string;
  /** The body parsed as JSON, or null. */
  body: unknown;
}

/** What the Telnyx and Vonage fakes share: a JSON API, and JSON webhooks signed over their bytes. */
export abstract class JsonLoopbackFake extends LoopbackHttpFake {
  /** POSTs an already signed webhook as it is (to replay or tamper with one). */
  async deliver(webhook: SignedWebhook): Promise<DeliveryResult> {
    const { status, body } = await this.post(webhook, 10_000);
    return { status, body };
  }

  /** A JSON webhook (an object is serialized) with the headers that sign its bytes. */
  protected signedJson(url: string, body: string | object, signatureHeaders: (rawBody: Buffer) => Record<string, string>): SignedWebhook {
    const rawBody = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body), 'utf8');
    return { method: 'POST', url, headers: { 'content-type': 'application/json', ...signatureHeaders(rawBody) }, rawBody };
  }

  /** Reads a request to the API as received. */
  protected async readJsonRequest(request: IncomingMessage): Promise<{ url: URL; recorded: RecordedJsonRequest }> {
    const rawBody = (await readRequestBody(request)).toString('utf8');
    const url = new URL(request.url ?? '/', 'http://fake');
    const recorded: RecordedJsonRequest = {
      method: request.method ?? 'GET',
      path: decodeURIComponent(url.pathname),
      query: Object.fromEntries(url.searchParams),
      headers: request.headers,
      rawBody,
      body: parseJson(rawBody),
    };
    return { url, recorded };
  }
}

/** A body parsed as JSON; null when empty or not JSON. */
export function parseJson(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  response.end(text);
}
