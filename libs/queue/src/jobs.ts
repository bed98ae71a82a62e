import { QueueName } from './queue-names';

/**
 * Place the call of a queued run. The run row stays the truth: the dialer
 * claims it with a conditional update that also answers the row, so a job
 * whose run has moved on does nothing.
 */
export interface PlaceCallJob {
  runId: number;
  organizationId: number;
  /**
   * What the dialer needs before the claim, copied from the run as it was
   * stored (these columns never change afterwards), so the claim is the
   * job's first query. Absent from jobs the dispatcher enqueues, and
   * dropped when a job is sent back to wait: the dialer reads those runs
   * first.
   */
  route?: PlaceCallRoute;
  /**
   * Counted in its organization's backlog (`DialBacklogs`), at the job's
   * priority, until its first pass takes it out. Set when the job is
   * enqueued, dropped when it is sent back to wait (its data rewritten
   * without it).
   */
  inBacklog?: boolean;
}

/** The columns of a run that decide how it is dialed: its configuration and the definition it may pick. */
export interface PlaceCallRoute {
  /** Null once the configuration is deleted (a run of it still queued then fails). */
  telephonyConfigurationId: number | null;
  workflowId: number;
  environment: 'production' | 'test';
  triggerUuid: string | null;
}

/**
 * Status events move the run; `recording` only says the carrier's recording
 * can be fetched, and `cost` only brings the price (and billed seconds) of a
 * call that has ended. `price_lookup` is the dialer's own: ask the carrier
 * again for the price of a completed call it had not priced yet.
 */
export type CallEventType =
  | 'ringing'
  | 'answered'
  | 'completed'
  | 'busy'
  | 'no_answer'
  | 'failed'
  | 'canceled'
  | 'recording'
  | 'cost'
  | 'price_lookup';

/** A status event reported by a carrier about one of our runs. */
export interface CallEventJob {
  runId: number;
  organizationId: number;
  provider: string;
  providerCallId: string;
  type: CallEventType;
  occurredAt: string;
  /** Carrier-reported talk time, with `completed`. */
  durationSeconds?: number;
  /**
   * With `cost`: the seconds the carrier billed, rounded up to its billing
   * step (Telnyx bills whole minutes on many routes: an 11 s call is billed
   * 60). Kept in `cost_info.billed_duration_seconds`, never as the call's
   * duration.
   */
  billedSeconds?: number;
  /** Carrier's words for a failure, with `failed`. */
  reason?: string;
  /**
   * With `failed`: the carrier's cause does not tell whether the call was
   * answered before it (a Telnyx hang-up cause outside its table), so the
   * answer of a call that was may still be on its way.
   */
  answerUnknown?: boolean;
  /** Who picked up, with `answered`, where the carrier runs answering-machine detection. */
  answeredBy?: 'human' | 'machine' | 'unknown';
  /**
   * With `answered`: `occurredAt` is not when the call was answered, but a
   * later time (an answering-machine verdict reported on its own, seconds
   * after the answer) or an estimate (a look-up's). It stands for the answer
   * time only until the carrier's report of the answer itself comes.
   */
  answerTimeEstimated?: boolean;
  /** What the carrier charged, with `completed` or `cost`, when it reports it. */
  cost?: { amount: number; currency: string };
  /** Where the carrier's recording can be fetched (with the carrier's auth), once it is ready. */
  recordingUrl?: string;
  /** With `price_lookup`: which look-up after the one at the hang-up this is (1, 2, ...). */
  lookup?: number;
  /**
   * Events of the same call that happened at the same instant, right after
   * this one: applied in order after it, in one job instead of one each.
   */
  following?: CallEventJob[];
  /**
   * With `following`: the carrier has nothing to do between these events (no
   * agent of its own to start on the answer), so they may move the run at
   * once, past the statuses in between.
   */
  nothingBetween?: boolean;
}

/** Job name → payload, per queue: a wrong enqueue does not compile. */
export interface JobsByQueue {
  [QueueName.Calls]: { 'place-call': PlaceCallJob };
  [QueueName.CallEvents]: { 'call-event': CallEventJob };
}

export type JobName<Q extends QueueName> = keyof JobsByQueue[Q] & string;
export type JobPayload<Q extends QueueName, N extends JobName<Q>> = JobsByQueue[Q][N];

export const JobName = {
  PlaceCall: 'place-call',
  CallEvent: 'call-event',
} as const;

/** Job ids never contain ':' (BullMQ reserves it). */
export function placeCallJobId(runId: number): string {
  return `run-${runId}`;
}

/** The events a call-events job carries, in the order they happened. */
export function eventsOf(job: CallEventJob): CallEventJob[] {
  const { following, nothingBetween: _nothingBetween, ...first } = job;
  return [first, ...(following ?? [])];
}

export function callEventJobId(event: Pick<CallEventJob, 'runId' | 'type'>): string {
  return `run-${event.runId}-${event.type}`;
}
