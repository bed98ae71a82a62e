import { ParsedWebhook, WebhookEvent, WebhookKind, WebhookRequest, WebhookRun } from '../carrier-webhooks';
import { wholeSeconds } from '../status-callback-events';

/**
 * Query parameter our NCCO adds to the `connect` action's event URL: events
 * of the WebSocket leg to the agent (its own uuid, its own `completed`) must
 * not be taken for the phone call's.
 */
export const VONAGE_AGENT_LEG_PARAM = 'leg';
export const VONAGE_AGENT_LEG_VALUE = 'agent';

/** Vonage reports prices in euros. */
const VONAGE_CURRENCY = 'EUR';

/** `detail` of a failed or rejected call → our reason. Others pass through as they are. */
const FAILURE_DETAIL: Record<string, string> = {
  invalid_number: 'invalid_number',
  number_out_of_service: 'invalid_number',
  cannot_route: 'unreachable',
  unavailable: 'unreachable',
  restricted: 'call_rejected',
  declined: 'call_rejected',
};

/**
 * Reads a Voice API webhook. Status events (`status`: started, ringing,
 * answered, human/machine, completed, busy, timeout, unanswered, rejected,
 * failed, cancelled) become ours; a `record` event (it has a `recording_url`)
 * says the recording is ready; the answer request only names the call.
 */
export function parseVonageWebhook(kind: WebhookKind, request: WebhookRequest, now = new Date()): ParsedWebhook {
  let body: Record<string, unknown>;
  try {
    const parsed = JSON.parse(request.rawBody.toString('utf8')) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { providerCallId: null, events: [] };
    body = parsed as Record<string, unknown>;
  } catch {
    return { providerCallId: null, events: [] };
  }
  const providerCallId = stringOr(body.uuid) ?? stringOr(body.call_uuid);
  if (kind === 'answer' || isAgentLeg(request.url)) return { providerCallId, events: [] };
  const occurredAt = vonageTime(body.timestamp) ?? now.toISOString();
  if (typeof body.recording_url === 'string' && body.recording_url) {
    return { providerCallId, events: [{ type: 'recording', occurredAt, recordingUrl: body.recording_url }] };
  }
  const event = vonageStatusEvent(body, occurredAt);
  return { providerCallId, events: event ? [event] : [] };
}

/**
 * Vonage signs the body (the JWT's `payload_hash`), not the URL: an event
 * that names a call (`uuid`) must name the run's. Not checked where nothing
 * can be: before the dial's answer has stored the run's uuid (Vonage may
 * call back first), for the agent leg's events (their own uuid; nothing is
 * taken from them), and for a recording event, which names only the
 * conversation. The agent leg's mark is in the URL's query, which the
 * signature does not cover either: it counts on the event URL only, where
 * it takes nothing, never on the answer URL, whose answer carries the run's
 * agent session.
 */
export function vonageOtherCall(kind: WebhookKind, parsed: ParsedWebhook, run: WebhookRun, request: WebhookRequest): string | null {
  if (!parsed.providerCallId || !run.providerCallId || (kind !== 'answer' && isAgentLeg(request.url))) return null;
  return parsed.providerCallId === run.providerCallId ? null : `the signed body is about call ${parsed.providerCallId.slice(0, 40)}, not the run's`;
}

/** A call's `status` (and the fields that come with it) as our event; null for states that move nothing. */
export function vonageStatusEvent(call: Record<string, unknown>, occurredAt: string): WebhookEvent | null {
  const detail = stringOr(call.detail);
  switch (call.status) {
    case 'ringing':
      return { type: 'ringing', occurredAt };
    case 'answered':
      return { type: 'answered', occurredAt };
    case 'human':
      // The verdicts come after the `answered` event, on their own: their time is not the answer's.
      return { type: 'answered', occurredAt, answeredBy: 'human', answerTimeEstimated: true };
    case 'machine':
      return { type: 'answered', occurredAt, answeredBy: 'machine', answerTimeEstimated: true };
    case 'completed':
      return completed(call, occurredAt);
    case 'busy':
      return { type: 'busy', occurredAt };
    case 'timeout':
    case 'unanswered':
      return { type: 'no_answer', occurredAt };
    case 'cancelled':
      return { type: 'canceled', occurredAt };
    case 'rejected':
      return { type: 'failed', occurredAt, reason: detail ? (FAILURE_DETAIL[detail] ?? detail) : 'call_rejected' };
    case 'failed':
      return { type: 'failed', occurredAt, reason: detail ? (FAILURE_DETAIL[detail] ?? detail) : 'carrier_failed' };
    default:
      return null;
  }
}

/** Vonage times come as ISO 8601 or as `YYYY-MM-DD HH:MM:SS` (UTC). */
export function vonageTime(value: unknown): string | null {
  if (typeof value !== 'string' || !value) return null;
  const iso = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?$/.test(value) ? `${value.replace(' ', 'T')}Z` : value;
  const at = new Date(iso);
  return Number.isNaN(at.getTime()) ? null : at.toISOString();
}

function completed(call: Record<string, unknown>, occurredAt: string): WebhookEvent {
  // Whole seconds, as every carrier's duration is stored; a negative or unreadable one is left out.
  const duration = typeof call.duration === 'string' || typeof call.duration === 'number' ? wholeSeconds(call.duration) : undefined;
  const price = Number(call.price);
  return {
    type: 'completed',
    occurredAt,
    ...(duration !== undefined ? { durationSeconds: duration } : {}),
    ...(call.price !== undefined && call.price !== null && call.price !== '' && Number.isFinite(price)
      ? { cost: { amount: price, currency: VONAGE_CURRENCY } }
      : {}),
  };
}

function isAgentLeg(url: string): boolean {
  try {
    return new URL(url).searchParams.get(VONAGE_AGENT_LEG_PARAM) === VONAGE_AGENT_LEG_VALUE;
  } catch {
    return false;
  }
}

function stringOr(value: unknown): string | null {
  return typeof value === 'string' && value ? value : null;
}
