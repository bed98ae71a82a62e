import { CallEventType } from '@app/queue';
import { SandboxOutcome } from './sandbox-outcome';

export interface TimelineEvent {
  type: CallEventType;
  /** Milliseconds after the dial request. */
  atMs: number;
  durationSeconds?: number;
  reason?: string;
}

/** The status events a sandbox call goes through, and when. */
export function sandboxTimeline(outcome: SandboxOutcome, ringMs: number, talkMs: number): TimelineEvent[] {
  const ringing: TimelineEvent = { type: 'ringing', atMs: 0 };
  switch (outcome) {
    case 'busy':
      return [ringing, { type: 'busy', atMs: ringMs }];
    case 'no_answer':
      return [ringing, { type: 'no_answer', atMs: ringMs }];
    case 'carrier_failure':
      return [ringing, { type: 'failed', atMs: ringMs, reason: 'carrier_failure' }];
    case 'reject_dial':
      return [];
    default:
      return [
        ringing,
        { type: 'answered', atMs: ringMs },
        { type: 'completed', atMs: ringMs + talkMs, durationSeconds: talkMs / 1000 },
      ];
  }
}

/** The timeline cut into groups of events that happen at the same instant, in order. */
export function instantsOf(timeline: TimelineEvent[]): TimelineEvent[][] {
  const instants: TimelineEvent[][] = [];
  for (const step of timeline) {
    const last = instants[instants.length - 1];
    if (last && last[0].atMs === step.atMs) last.push(step);
    else instants.push([step]);
  }
  return instants;
}
