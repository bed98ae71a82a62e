import { CallEventType } from '@app/queue';
import { WebhookEvent } from './carrier-webhooks';

/** What a status callback says beyond its status, for the events that carry it. */
export interface StatusCallbackFacts {
  occurredAt: string;
  answeredBy?: WebhookEvent['answeredBy'];
  durationSeconds?: number;
  cost?: WebhookEvent['cost'];
  /** Read only when the call failed. */
  failureReason: () => string;
}

/**
 * The event a status callback reports, once the carrier's status name is
 * mapped to ours (Twilio and Plivo name the same call states alike):
 * `answered` carries who answered, `completed` the length and cost, `failed`
 * the reason. An unknown status (queued, initiated) reports nothing.
 */
export function statusCallbackEvents(type: CallEventType | undefined, facts: StatusCallbackFacts): WebhookEvent[] {
  const { occurredAt, answeredBy, durationSeconds, cost } = facts;
  switch (type) {
    case undefined:
      return [];
    case 'answered':
      return [{ type, occurredAt, ...(answeredBy ? { answeredBy } : {}) }];
    case 'completed':
      return [completedEvent(occurredAt, durationSeconds, cost)];
    case 'failed':
      return [{ type, occurredAt, reason: facts.failureReason() }];
    default:
      return [{ type, occurredAt }];
  }
}

export function completedEvent(occurredAt: string, durationSeconds: number | undefined, cost: WebhookEvent['cost']): WebhookEvent {
  return {
    type: 'completed',
    occurredAt,
    ...(durationSeconds !== undefined ? { durationSeconds } : {}),
    ...(cost ? { cost } : {}),
  };
}

/** A carrier's length in seconds (a string or a number), rounded; undefined when absent or not a length. */
export function wholeSeconds(value: string | number | null | undefined): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const number = Number(value);
  return Number.isFinite(number) && number >= 0 ? Math.round(number) : undefined;
}
