import { CallEventType } from '@app/queue';
import { WebhookEvent } from '../carrier-webhooks';
import { completedEvent, statusCallbackEvents, wholeSeconds } from '../status-callback-events';
import { twilioSipFailureReason } from './twilio-errors';

/** Twilio's `CallStatus` names; `queued` and `initiated` tell nothing the dialer does not know. */
const TWILIO_CALL_STATUSES: ReadonlyMap<string, CallEventType> = new Map<string, CallEventType>([
  ['ringing', 'ringing'],
  ['in-progress', 'answered'],
  ['completed', 'completed'],
  ['busy', 'busy'],
  ['no-answer', 'no_answer'],
  ['canceled', 'canceled'],
  ['failed', 'failed'],
]);

/** The Call resource as Twilio's REST API returns it (the fields we read). */
export interface TwilioCallResource {
  sid: string;
  status: string;
  to?: string | null;
  from?: string | null;
  direction?: string | null;
  start_time?: string | null;
  end_time?: string | null;
  duration?: string | null;
  price?: string | null;
  price_unit?: string | null;
  answered_by?: string | null;
  date_created?: string | null;
}

/**
 * AnsweredBy (Answering Machine Detection): `human`; `machine_start`,
 * `machine_end_beep`, `machine_end_silence`, `machine_end_other`; `fax`;
 * `unknown`. A fax line is no person to talk to, so it counts as a machine.
 */
export function twilioAnsweredBy(value: string | null | undefined): WebhookEvent['answeredBy'] {
  if (!value) return undefined;
  if (value === 'human') return 'human';
  if (value === 'fax' || value.startsWith('machine')) return 'machine';
  return 'unknown';
}

/** Twilio reports what it charged as a negative amount (`Price=-0.0130`, `PriceUnit=USD`); we store what was paid. */
export function twilioCost(price: string | null | undefined, unit: string | null | undefined): WebhookEvent['cost'] {
  if (price === null || price === undefined || price === '' || !unit) return undefined;
  const amount = Math.abs(Number(price));
  return Number.isFinite(amount) ? { amount, currency: unit.toUpperCase() } : undefined;
}

/**
 * Events from a status callback (or the answer request). Status callbacks
 * carry `CallStatus`, and with `StatusCallbackEvent` also `Timestamp`
 * (RFC 2822) and `SequenceNumber`; completed calls carry `CallDuration`.
 * `initiated` and `queued` tell nothing the dialer does not know.
 */
export function twilioStatusEvents(fields: ReadonlyMap<string, string>, receivedAt: Date): WebhookEvent[] {
  return statusCallbackEvents(TWILIO_CALL_STATUSES.get(fields.get('CallStatus') ?? ''), {
    occurredAt: dateOrNow(fields.get('Timestamp'), receivedAt),
    answeredBy: twilioAnsweredBy(fields.get('AnsweredBy')),
    durationSeconds: wholeSeconds(fields.get('CallDuration')),
    cost: twilioCost(fields.get('Price'), fields.get('PriceUnit')),
    failureReason: () => twilioSipFailureReason(wholeSeconds(fields.get('SipResponseCode'))),
  });
}

/**
 * A recording status callback: `RecordingStatus=completed` with
 * `RecordingUrl` (no extension; Twilio serves `.wav` and `.mp3` from it).
 */
export function twilioRecordingEvents(fields: ReadonlyMap<string, string>, receivedAt: Date): WebhookEvent[] {
  const url = fields.get('RecordingUrl');
  if (fields.get('RecordingStatus') !== 'completed' || !url) return [];
  return [{ type: 'recording', occurredAt: receivedAt.toISOString(), recordingUrl: `${url}.wav` }];
}

/** What a Call resource says happened, in order, for reconciling a run whose callbacks stopped. */
export function twilioCallEvents(call: TwilioCallResource, now: Date): WebhookEvent[] {
  const startedAt = dateOrNow(call.start_time ?? call.date_created ?? undefined, now);
  const endedAt = dateOrNow(call.end_time ?? undefined, now);
  const duration = wholeSeconds(call.duration ?? undefined);
  const answeredBy = twilioAnsweredBy(call.answered_by);
  const ringing: WebhookEvent = { type: 'ringing', occurredAt: startedAt };
  switch (call.status) {
    case 'ringing':
      return [ringing];
    case 'in-progress':
      return [ringing, { type: 'answered', occurredAt: startedAt, answerTimeEstimated: true, ...(answeredBy ? { answeredBy } : {}) }];
    case 'completed': {
      const cost = twilioCost(call.price, call.price_unit);
      const answeredAt = duration !== undefined ? new Date(Date.parse(endedAt) - duration * 1000).toISOString() : startedAt;
      return [
        ringing,
        // From whole seconds, or the call's start: an estimate.
        { type: 'answered', occurredAt: answeredAt, answerTimeEstimated: true, ...(answeredBy ? { answeredBy } : {}) },
        completedEvent(endedAt, duration, cost),
      ];
    }
    case 'busy':
      return [{ type: 'busy', occurredAt: endedAt }];
    case 'no-answer':
      return [ringing, { type: 'no_answer', occurredAt: endedAt }];
    case 'canceled':
      return [{ type: 'canceled', occurredAt: endedAt }];
    case 'failed':
      return [{ type: 'failed', occurredAt: endedAt, reason: 'carrier_failed' }];
    default:
      // queued / initiated: placed, nothing happened yet.
      return [];
  }
}

function dateOrNow(value: string | undefined, fallback: Date): string {
  const parsed = value ? Date.parse(value) : NaN;
  return (Number.isNaN(parsed) ? fallback : new Date(parsed)).toISOString();
}
