import { CallEventType } from '@app/queue';

/** A carrier's HTTP request to one of our webhook URLs, as received. */
export interface WebhookRequest {
  method: string;
  /** The absolute public URL the carrier called (PUBLIC_BASE_URL + path + query): signature schemes sign it. */
  url: string;
  /** Header names in lower case. */
  headers: Record<string, string | undefined>;
  /** The body exactly as sent; signatures are over these bytes. */
  rawBody: Buffer;
}

export type WebhookKind = 'answer' | 'status' | 'recording';

/** Thrown by `verifyWebhook`: 401 when unsigned, 403 when forged or replayed. */
export class WebhookRejected extends Error {
  constructor(
    readonly status: 401 | 403,
    message: string,
  ) {
    super(message);
    this.name = 'WebhookRejected';
  }
}

/** One status event read from a webhook, before it is tied to our run and organization. */
export interface WebhookEvent {
  type: CallEventType;
  occurredAt: string;
  durationSeconds?: number;
  reason?: string;
  /** With `failed`: the carrier's cause does not tell whether the call was answered first (see `CallEventJob`). */
  answerUnknown?: boolean;
  answeredBy?: 'human' | 'machine' | 'unknown';
  /** With `answered`: the time is not the answer's, but a verdict's after it or a look-up's estimate (see `CallEventJob`). */
  answerTimeEstimated?: boolean;
  cost?: { amount: number; currency: string };
  /** With `cost`: the seconds the carrier billed, rounded up to its billing step (see `CallEventJob`). */
  billedSeconds?: number;
  recordingUrl?: string;
}

export interface ParsedWebhook {
  providerCallId: string | null;
  /** The run the carrier's signed body names, where it echoes one back (Telnyx's `client_state`). */
  runId?: number | null;
  events: WebhookEvent[];
}

/** What a webhook is checked against: the run its URL names. */
export interface WebhookRun {
  id: number;
  providerCallId: string | null;
}

/** What our answer URL tells the carrier to do with an answered call. */
export interface AnswerInstructions {
  contentType: string;
  body: string;
}

export interface AnswerContext {
  runId: number;
  /** The agent runtime's media WebSocket, with the session token already in it. */
  streamUrl: string;
  sessionToken: string;
  settings: Record<string, unknown>;
  /** Who answered, when the carrier reports it on the answer request (AMD). */
  answeredBy?: 'human' | 'machine' | 'unknown';
  /** The run has already ended (canceled, or given up by the reaper): end the call at once, with no agent. */
  endCall?: boolean;
}

/**
 * The webhook side of a real carrier: verify, read, and answer its callbacks.
 * Verification runs before anything else and throws `WebhookRejected`. Its
 * 401 (unsigned) depends on the headers alone, checked before credentials
 * are read: the gateway asks with none before it reads the run, so that an
 * unsigned request is answered alike for every run id.
 */
export interface CarrierWebhooks {
  verifyWebhook(request: WebhookRequest, credentials: Record<string, unknown> | null, nowMs: number): void;
  parseWebhook(kind: WebhookKind, request: WebhookRequest): ParsedWebhook;
  /**
   * For a carrier whose signature covers the body but not the URL (Telnyx,
   * Vonage): why the signed body is not about the URL's run, or null when it
   * is. Without it, a genuine event of one call could be posted to another
   * run's URL and move that run. Carriers that sign the URL, run id and all,
   * have none.
   */
  otherCallThan?(kind: WebhookKind, parsed: ParsedWebhook, run: WebhookRun, request: WebhookRequest): string | null;
  answerInstructions(context: AnswerContext): AnswerInstructions;
  /** Downloads a recording the carrier reported, with the carrier's auth. */
  fetchRecording(recordingUrl: string, credentials: Record<string, unknown> | null): Promise<{ contentType: string; body: Buffer }>;
}

export function hasWebhooks(provider: object): provider is CarrierWebhooks {
  return typeof (provider as Partial<CarrierWebhooks>).verifyWebhook === 'function';
}
