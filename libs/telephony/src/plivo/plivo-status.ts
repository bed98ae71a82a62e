import { CallEventType } from '@app/queue';
import { WebhookEvent } from '../carrier-webhooks';
import { completedEvent, statusCallbackEvents, wholeSeconds } from '../status-callback-events';
import { plivoHangupReason } from './plivo-errors';

/** Plivo bills in US dollars and reports amounts without a currency. */
export const PLIVO_CURRENCY = 'USD';

/** Plivo's `CallStatus` names; `timeout` is a no-answer, `cancel` a call we hung up before it was answered. */
const PLIVO_CALL_STATUSES: ReadonlyMap<string, CallEventType> = new Map<string, CallEventType>([
  ['ringing', 'ringing'],
  ['in-progress', 'answered'],
  ['completed', 'completed'],
  ['busy', 'busy'],
  ['no-answer', 'no_answer'],
  ['timeout', 'no_answer'],
  ['cancel', 'canceled'],
  ['failed', 'failed'],
]);

/** A live call (`GET .../Call/{uuid}/?status=live`), the fields we read. */
export interface PlivoLiveCall {
  call_status?: string;
  call_uuid?: string;
  request_uuid?: string;
  session_start?: string;
  direction?: string;
  from?: string;
  to?: string;
}

/** A call detail record (`GET .../Call/{uuid}/`), the fields we read. */
export interface PlivoCallRecord {
  call_uuid?: string;
  call_direction?: string;
  from_number?: string;
  to_number?: string;
  answer_time?: string | null;
  end_time?: string | null;
  initiation_time?: string | null;
  call_duration?: number | string | null;
  bill_duration?: number | string | null;
  total_amount?: string | number | null;
  hangup_cause_name?: string | null;
  hangup_cause_code?: number | null;
}

/**
 * Events from a Plivo callback to our status URL (it is the call's ring_url,
 * hangup_url and machine_detection_url) or to our answer URL. `CallStatus`
 * is one of ringing, in-progress, completed, busy, no-answer, failed,
 * timeout or cancel; `Event=MachineDetection` carries `Machine=true|false`.
 * Plivo's callback times are in the account's time zone, so events are
 * dated when they arrive (they are sent as they happen).
 */
export function plivoStatusEvents(fields: ReadonlyMap<string, string>, receivedAt: Date): WebhookEvent[] {
  const occurredAt = receivedAt.toISOString();
  const answeredBy = plivoAnsweredBy(fields.get('Machine'));
  if (fields.get('Event') === 'MachineDetection') {
    return [{ type: 'answered', occurredAt, ...(answeredBy ? { answeredBy } : {}) }];
  }
  return statusCallbackEvents(PLIVO_CALL_STATUSES.get(fields.get('CallStatus') ?? ''), {
    occurredAt,
    answeredBy,
    durationSeconds: wholeSeconds(fields.get('Duration')),
    cost: plivoCost(fields.get('TotalCost')),
    failureReason: () => plivoHangupReason(fields.get('HangupCauseName') ?? fields.get('HangupCause')),
  });
}

/** The `<Record>` callback: the file is ready at `RecordUrl`. */
export function plivoRecordingEvents(fields: ReadonlyMap<string, string>, receivedAt: Date): WebhookEvent[] {
  const url = fields.get('RecordUrl') ?? fields.get('record_url');
  return url ? [{ type: 'recording', occurredAt: receivedAt.toISOString(), recordingUrl: url }] : [];
}

/** What a live call says happened so far. */
export function plivoLiveCallEvents(call: PlivoLiveCall, now: Date): WebhookEvent[] {
  const occurredAt = plivoDate(call.session_start, now);
  const ringing: WebhookEvent = { type: 'ringing', occurredAt };
  if (call.call_status === 'in-progress') return [ringing, { type: 'answered', occurredAt, answerTimeEstimated: true }];
  if (call.call_status === 'ringing' || call.call_status === 'early media') return [ringing];
  return [];
}

/** What an ended call's detail record says happened. */
export function plivoCallRecordEvents(record: PlivoCallRecord, now: Date): WebhookEvent[] {
  const endedAt = plivoDate(record.end_time, now);
  const cause = record.hangup_cause_name ?? undefined;
  if (record.answer_time) {
    const duration = wholeSeconds(record.call_duration);
    const cost = plivoCost(record.total_amount);
    const answeredAt = plivoDate(record.answer_time, now);
    return [
      { type: 'ringing', occurredAt: plivoDate(record.initiation_time, now) },
      { type: 'answered', occurredAt: answeredAt },
      completedEvent(endedAt, duration, cost),
    ];
  }
  if (cause && /busy/i.test(cause)) return [{ type: 'busy', occurredAt: endedAt }];
  if (cause && /no answer|timeout/i.test(cause)) return [{ type: 'no_answer', occurredAt: endedAt }];
  if (cause && /cancel/i.test(cause)) return [{ type: 'canceled', occurredAt: endedAt }];
  return [{ type: 'failed', occurredAt: endedAt, reason: plivoHangupReason(cause) }];
}

export function plivoAnsweredBy(machine: string | undefined): WebhookEvent['answeredBy'] {
  if (machine === undefined) return undefined;
  if (machine === 'true') return 'machine';
  if (machine === 'false') return 'human';
  return 'unknown';
}

export function plivoCost(amount: string | number | null | undefined): WebhookEvent['cost'] {
  if (amount === null || amount === undefined || amount === '') return undefined;
  const value = Math.abs(Number(amount));
  return Number.isFinite(value) ? { amount: value, currency: PLIVO_CURRENCY } : undefined;
}

/**
 * Plivo writes `yyyy-MM-dd HH:mm:ss` in the account's time zone (UTC unless
 * changed in the console); read as UTC, never later than now.
 */
function plivoDate(value: string | null | undefined, now: Date): string {
  const parsed = plivoTimeMs(value);
  if (parsed === null) return now.toISOString();
  return new Date(Math.min(parsed, now.getTime())).toISOString();
}

/** A Plivo time (`yyyy-MM-dd HH:mm:ss`, read as UTC, or with its own offset) in epoch ms; null when unreadable. */
export function plivoTimeMs(value: string | null | undefined): number | null {
  if (!value) return null;
  const plivo = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d+)?)(?:([+-]\d{2}):?(\d{2}))?$/.exec(value);
  const parsed = Date.parse(plivo ? `${plivo[1]}T${plivo[2]}${plivo[3] ? `${plivo[3]}:${plivo[4]}` : 'Z'}` : value);
  return Number.isNaN(parsed) ? null : parsed;
}
