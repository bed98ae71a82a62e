import { WebhookEvent } from '../carrier-webhooks';
import { TELNYX_RING_TIMEOUT_SECS } from './telnyx-dial';

/**
 * How far past the ring timeout a live call must be to count as answered:
 * room for a ring timer Telnyx started a little after the call's
 * `start_time`, and for the whole seconds of the `Date` its age is measured
 * against.
 */
const ANSWERED_MARGIN_SECS = 30;

/** What Telnyx tells of a live call: its call status, or its entry among a connection's active calls. */
export interface TelnyxLiveCall {
  start_time?: unknown;
  call_duration?: unknown;
}

/**
 * The events a live call's status proves. Telnyx says whether a call is
 * alive and for how long, never whether it was answered; but it hangs up a
 * call that rings past `TELNYX_RING_TIMEOUT_SECS` (sent with every dial), so
 * a call alive well past that was answered, no later than the timeout. Its
 * age is the longer of the two Telnyx gives (`start_time`, `call_duration`),
 * which holds whether the duration counts from the dial or from the answer.
 * A younger call counts as ringing: it may have been answered, and only its
 * own `call.answered` event can say so.
 */
export function telnyxLiveCallEvents(call: TelnyxLiveCall, nowMs: number): WebhookEvent[] {
  const startMs = typeof call.start_time === 'string' ? Date.parse(call.start_time) : Number.NaN;
  const duration = typeof call.call_duration === 'number' && Number.isFinite(call.call_duration) && call.call_duration >= 0 ? call.call_duration : 0;
  const startedAtMs = Number.isFinite(startMs) && startMs <= nowMs ? startMs : nowMs - duration * 1000;
  const ringing: WebhookEvent = { type: 'ringing', occurredAt: new Date(startedAtMs).toISOString() };
  const aliveForSecs = Math.max((nowMs - startedAtMs) / 1000, duration);
  if (aliveForSecs <= TELNYX_RING_TIMEOUT_SECS + ANSWERED_MARGIN_SECS) return [ringing];
  const answeredBy = Math.min(nowMs, startedAtMs + TELNYX_RING_TIMEOUT_SECS * 1000);
  return [ringing, { type: 'answered', occurredAt: new Date(answeredBy).toISOString(), answerTimeEstimated: true }];
}

/** Whether those events say the call was answered. */
export function provesAnswered(events: readonly WebhookEvent[]): boolean {
  return events.some((event) => event.type === 'answered');
}
