export const RUN_STATUSES = [
  'queued',
  'dialing',
  'ringing',
  'in_progress',
  'completed',
  'busy',
  'no_answer',
  'failed',
  'canceled',
] as const;

export type RunStatus = (typeof RUN_STATUSES)[number];
export type RunEnvironment = 'production' | 'test';

export const FINAL_RUN_STATUSES: readonly RunStatus[] = ['completed', 'busy', 'no_answer', 'failed', 'canceled'];

/** A run in one of these has a call the carrier may be placing or connecting: it holds its concurrency slot. */
export const LIVE_STATUSES: readonly RunStatus[] = ['dialing', 'ringing', 'in_progress'];

/**
 * A run in one of these can have an agent runtime on its call: its session
 * is open unless the run is complete or the session was closed.
 */
export const AGENT_SESSION_STATUSES: readonly RunStatus[] = [...LIVE_STATUSES, 'completed'];

export function isFinalRunStatus(status: RunStatus): boolean {
  return FINAL_RUN_STATUSES.includes(status);
}

/**
 * Whether a run's call talked and has ended, so the carrier bills a
 * duration and a price for it: the run completed, or failed once answered
 * (the reaper ended it past its maximum duration and hung the call up).
 * `TALKED_AND_ENDED_SQL` is the same condition on a `workflow_runs` row.
 */
export function talkedAndEnded(run: { status: RunStatus; answeredAt: Date | null }): boolean {
  return run.status === 'completed' || (run.status === 'failed' && run.answeredAt !== null);
}

export const TALKED_AND_ENDED_SQL = `(status = 'completed' OR (status = 'failed' AND answered_at IS NOT NULL))`;

/**
 * Which statuses a run may move to each status from. Moves only go forward:
 * a late or repeated event whose source status is gone changes nothing.
 */
export const RUN_TRANSITIONS: Readonly<Record<RunStatus, readonly RunStatus[]>> = {
  queued: ['dialing'],
  dialing: ['queued'],
  ringing: ['dialing'],
  in_progress: ['dialing', 'ringing'],
  completed: ['dialing', 'ringing', 'in_progress'],
  busy: ['dialing', 'ringing'],
  no_answer: ['dialing', 'ringing'],
  failed: ['queued', 'dialing', 'ringing', 'in_progress'],
  canceled: ['queued', 'dialing', 'ringing', 'in_progress'],
};
