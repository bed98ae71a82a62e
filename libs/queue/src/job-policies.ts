import { JobsOptions } from 'bullmq';
import { doublingDelay } from '@app/common';

/** Name of the backoff strategy the workers register (see `cappedExponentialBackoff`). */
export const CAPPED_EXPONENTIAL = 'capped-exponential';

/**
 * Failed jobs kept for a look (a week, and at most this many a queue): an
 * outage that fails jobs by the hundred thousand must not fill Redis' memory
 * with them.
 */
const FAILED_KEPT = { age: 7 * 24 * 3600, count: 50_000 };
/**
 * Stack traces a job keeps, its latest failures': BullMQ keeps one per failed
 * attempt on the job (up to 40, a kilobyte or two each) for as long as the job
 * is kept. The dialer's log has every failure in full.
 */
const STACK_TRACES_KEPT = 3;

/** Retry and retention per job, named once here rather than at call sites. */
export const JobPolicy = {
  placeCall: {
    // Carrier throttling and pacing delays do not spend attempts; these are for infrastructure errors.
    attempts: 40,
    backoff: { type: CAPPED_EXPONENTIAL },
    removeOnComplete: { age: 3600, count: 10000 },
    removeOnFail: FAILED_KEPT,
    stackTraceLimit: STACK_TRACES_KEPT,
  },
  callEvent: {
    attempts: 40,
    backoff: { type: CAPPED_EXPONENTIAL },
    removeOnComplete: { age: 3600, count: 10000 },
    removeOnFail: FAILED_KEPT,
    stackTraceLimit: STACK_TRACES_KEPT,
  },
} as const satisfies Record<string, JobsOptions>;

const BACKOFF_CAP_MS = 30_000;

/**
 * Backoff for infrastructure errors (Postgres or Redis away): grows from 1 s
 * to at most 30 s so a long outage is ridden out instead of failing the job.
 */
export function cappedExponentialBackoff(attemptsMade: number): number {
  const base = doublingDelay(1000, Math.max(1, attemptsMade), BACKOFF_CAP_MS);
  return Math.round(base * (0.5 + Math.random() * 0.5));
}
