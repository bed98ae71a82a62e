import { ParsedWebhook, WebhookEvent, WebhookRequest, WebhookRun } from '../carrier-webhooks';
import { runIdFromTelnyxClientState } from './telnyx-client-state';

interface TelnyxEnvelope {
  data?: {
    event_type?: unknown;
    occurred_at?: unknown;
    payload?: Record<string, unknown>;
  };
}

/** `hangup_cause` → our event; causes not listed end the call as `failed` with the cause as reason. */
const HANGUP: Record<string, Pick<WebhookEvent, 'type' | 'reason'>> = {
  normal_clearing: { type: 'completed' },
  time_limit: { type: 'completed', reason: 'time_limit' },
  user_busy: { type: 'busy' },
  timeout: { type: 'no_answer' },
  no_answer: { type: 'no_answer' },
  originator_cancel: { type: 'canceled' },
  call_rejected: { type: 'failed', reason: 'call_rejected' },
  not_found: { type: 'failed', reason: 'invalid_number' },
};

/** Standard (`detect`) and premium detection results. */
const ANSWERED_BY: Record<string, 'human' | 'machine' | 'unknown'> = {
  human: 'human',
  human_residence: 'human',
  human_business: 'human',
  machine: 'machine',
  fax_detected: 'machine',
  not_sure: 'unknown',
  silence: 'unknown',
};

/**
 * Reads a Call Control webhook (`{ data: { event_type, occurred_at, payload } }`).
 * Telnyx has no ringing event for an outbound leg: `call.initiated` (the leg
 * exists at the carrier) stands for it. The hang-up carries no talk time (the
 * dialer computes one from answer to hang-up); `call.cost` (sent when the Call
 * Control App has `call_cost_in_webhooks`) brings the price and the billed
 * seconds, rounded up to Telnyx's billing step: kept beside the price, they
 * do not replace the talk time.
 */
export function parseTelnyxWebhook(request: WebhookRequest, now = new Date()): ParsedWebhook {
  let envelope: TelnyxEnvelope;
  try {
    envelope = JSON.parse(request.rawBody.toString('utf8')) as TelnyxEnvelope;
  } catch {
    return { providerCallId: null, events: [] };
  }
  const data = envelope?.data;
  const payload = data?.payload ?? {};
  const providerCallId = typeof payload.call_control_id === 'string' ? payload.call_control_id : null;
  const occurredAt = isoOr(data?.occurred_at ?? payload.occurred_at, now);
  const event = telnyxEvent(String(data?.event_type ?? ''), payload, occurredAt);
  return { providerCallId, runId: runIdFromTelnyxClientState(payload.client_state), events: event ? [event] : [] };
}

/**
 * Telnyx signs the timestamp and the body, not the URL: the body must be
 * about the URL's run. Every call we place carries its run id as
 * `client_state`, which Telnyx echoes in each event; an event without one
 * must at least name the run's call. One that names neither is refused:
 * nothing would tie it to this run. Once the run's call id is stored (it
 * never changes after), an event of another call is refused even with the
 * run's `client_state`, which is no secret (its run id in base64): anyone
 * dialing through the same Telnyx account could set it on a call of theirs.
 */
export function telnyxOtherCall(parsed: ParsedWebhook, run: WebhookRun): string | null {
  if (parsed.runId !== undefined && parsed.runId !== null) {
    if (parsed.runId !== run.id) return `the signed body's client_state names run ${parsed.runId}`;
    if (parsed.providerCallId !== null && run.providerCallId !== null && parsed.providerCallId !== run.providerCallId) {
      return `the signed body is about call ${parsed.providerCallId.slice(0, 60)}, not the run's`;
    }
    return null;
  }
  if (parsed.providerCallId !== null && parsed.providerCallId === run.providerCallId) return null;
  return "the signed body names neither this run (client_state) nor the run's call";
}

function telnyxEvent(type: string, payload: Record<string, unknown>, occurredAt: string): WebhookEvent | null {
  switch (type) {
    case 'call.initiated':
      return { type: 'ringing', occurredAt };
    case 'call.answered':
      return { type: 'answered', occurredAt };
    case 'call.machine.detection.ended':
    case 'call.machine.premium.detection.ended':
      // The verdict comes seconds after the answer, in an event of its own: its time is not the answer's.
      return { type: 'answered', occurredAt, answeredBy: ANSWERED_BY[String(payload.result)] ?? 'unknown', answerTimeEstimated: true };
    case 'call.hangup': {
      const cause = String(payload.hangup_cause ?? 'unspecified');
      // A cause outside the table may end an answered call as well as one that never was: said so, for the dialer.
      const mapped = HANGUP[cause] ?? { type: 'failed' as const, reason: cause, answerUnknown: true };
      return { ...mapped, occurredAt };
    }
    case 'call.recording.saved': {
      const url = recordingUrl(payload);
      return url ? { type: 'recording', occurredAt, recordingUrl: url } : null;
    }
    case 'call.cost':
      return costEvent(payload, occurredAt);
    default:
      return null;
  }
}

function recordingUrl(payload: Record<string, unknown>): string | null {
  for (const field of ['recording_urls', 'public_recording_urls']) {
    const urls = payload[field] as Record<string, unknown> | undefined;
    for (const format of ['wav', 'mp3']) {
      if (typeof urls?.[format] === 'string' && urls[format]) return urls[format] as string;
    }
  }
  return null;
}

function costEvent(payload: Record<string, unknown>, occurredAt: string): WebhookEvent | null {
  if (payload.status !== 'success') return null;
  const amount = Number(payload.total_cost);
  if (payload.total_cost === null || payload.total_cost === undefined || !Number.isFinite(amount)) return null;
  const parts = Array.isArray(payload.cost_parts) ? (payload.cost_parts as Record<string, unknown>[]) : [];
  const currency = parts.map((part) => part?.currency).find((value) => typeof value === 'string' && value) as string | undefined;
  const billed = Number(payload.billed_duration_secs);
  // Its own type, not `completed`: Telnyx does not promise the order of its webhooks, and a price that is
  // applied before the hang-up must not end the call in its stead.
  return {
    type: 'cost',
    occurredAt,
    cost: { amount, currency: currency ?? 'USD' },
    ...(payload.billed_duration_secs !== undefined && payload.billed_duration_secs !== null && Number.isFinite(billed)
      ? { billedSeconds: Math.max(0, billed) }
      : {}),
  };
}

function isoOr(value: unknown, now: Date): string {
  if (typeof value === 'string') {
    const at = new Date(value);
    if (!Number.isNaN(at.getTime())) return at.toISOString();
  }
  return now.toISOString();
}
