import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo, Socket } from 'node:net';

/** A webhook as a carrier sends it; shaped like the service's `WebhookRequest`, so unit tests can verify it directly. */
export interface LoopbackWebhook {
  method: string;
  url: string;
  headers: Record<string, string>;
  rawBody: Buffer;
}

export interface LoopbackWebhookAnswer {
  status: number;
  body: string;
  headers: Headers;
}

/**
 * The plumbing every carrier fake shares: an HTTP server on 127.0.0.1 that
 * hands each request to the carrier's `handle`, the URL to point the service
 * at, and webhooks posted to loopback addresses only.
 */
export abstract class LoopbackHttpFake {
  private server: Server | null = null;
  private base: string | null = null;
  private readonly sockets = new Set<Socket>();
  private readonly redirects = new Map<string, string>();

  protected constructor(protected readonly fakeName: string) {}

  /** The credentials a telephony configuration needs to use this fake. */
  abstract get credentials(): Record<string, string>;

  /** Starts listening on 127.0.0.1 and returns the base URL (what the carrier's API URL setting should be). */
  async start(): Promise<string> {
    if (this.base) return this.base;
    const server = createServer((request, response) => {
      const redirect = this.redirects.get(request.url ?? '');
      if (redirect) {
        response.writeHead(302, { location: redirect }).end();
        return;
      }
      void this.handle(request, response).catch((error: unknown) => {
        if (!response.headersSent) this.handlerFailed(response, error);
      });
    });
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.server = server;
    this.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this.base;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    this.base = null;
    if (!server) return;
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  get url(): string {
    if (!this.base) throw new Error(`${this.fakeName} is not started`);
    return this.base;
  }

  /** A URL on the fake's own origin that answers 302 to `location`, as a carrier hands a download over to its storage. */
  redirectTo(location: string): string {
    const path = `/redirect/${this.redirects.size + 1}`;
    this.redirects.set(path, location);
    return `${this.url}${path}`;
  }

  protected abstract handle(request: IncomingMessage, response: ServerResponse): Promise<void>;

  /** What the fake answers when `handle` throws (a bug in the fake, or a request it cannot read). */
  protected handlerFailed(response: ServerResponse, error: unknown): void {
    response.writeHead(500, { 'content-type': 'text/plain' });
    response.end(String(error));
  }

  /** POSTs a signed webhook as it is (loopback addresses only). */
  protected async post(webhook: LoopbackWebhook, timeoutMs: number): Promise<LoopbackWebhookAnswer> {
    const host = new URL(webhook.url).hostname;
    if (!['127.0.0.1', 'localhost', '[::1]', '::1'].includes(host)) {
      throw new Error(`The fake only sends webhooks to loopback addresses, not ${host}`);
    }
    const response = await fetch(webhook.url, {
      method: webhook.method,
      headers: webhook.headers,
      body: webhook.rawBody,
      signal: AbortSignal.timeout(timeoutMs),
    });
    return { status: response.status, body: await response.text(), headers: response.headers };
  }
}

export function readRequestBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}
