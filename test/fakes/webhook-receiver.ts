import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { CarrierWebhooks, WebhookRejected, WebhookRequest } from '@app/telephony';

/**
 * A stand-in for our API in a provider's unit spec: verifies each callback a
 * carrier fake sends with the provider, the way the service does, records it
 * with its verdict, and answers the answer URL with the provider's
 * instructions (for run 7, under `answerSettings`).
 */
export class WebhookReceiver {
  readonly received: Array<{ request: WebhookRequest; verdict: number }> = [];
  provider!: CarrierWebhooks;
  base = '';
  private server: Server | null = null;

  constructor(
    private readonly credentials: () => Record<string, unknown>,
    public answerSettings: Record<string, unknown> = {},
  ) {}

  async start(): Promise<string> {
    this.server = createServer((incoming, response) => {
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
      incoming.on('end', () => {
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(incoming.headers)) if (typeof value === 'string') headers[name] = value;
        const request: WebhookRequest = { method: incoming.method ?? 'GET', url: `${this.base}${incoming.url}`, headers, rawBody: Buffer.concat(chunks) };
        try {
          this.provider.verifyWebhook(request, this.credentials(), Date.now());
        } catch (error) {
          const status = error instanceof WebhookRejected ? error.status : 500;
          this.received.push({ request, verdict: status });
          response.writeHead(status).end();
          return;
        }
        this.received.push({ request, verdict: 200 });
        const kind = incoming.url!.split('/')[5] as 'answer' | 'status' | 'recording';
        if (kind !== 'answer') return void response.writeHead(204).end();
        const parsed = this.provider.parseWebhook(kind, request);
        const answer = this.provider.answerInstructions({
          runId: 7,
          streamUrl: 'wss://agent.example.test/media?session_token=tok-7',
          sessionToken: 'tok-7',
          settings: this.answerSettings,
          answeredBy: parsed.events.find((event) => event.type === 'answered')?.answeredBy,
        });
        response.writeHead(200, { 'content-type': answer.contentType }).end(answer.body);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.base;
  }

  /** The callbacks to a path (`/status/`, `/recording/`) received after the first `count`. */
  since(count: number, path: string) {
    return this.received.slice(count).filter(({ request }) => request.url.includes(path));
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** The status a webhook check refused with, or null when it passed. */
export function rejection(action: () => void): number | null {
  try {
    action();
    return null;
  } catch (error) {
    if (error instanceof WebhookRejected) return error.status;
    throw error;
  }
}

/** Polls a synchronous condition every 10 ms; fails after `timeoutMs`. */
export async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
