import { JobsOptions } from 'bullmq';
import { doublingDelay, isDatabaseUnavailable, SLOW_STATEMENT } from '@app/common';

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

/**
 * How long a job waits out a database that cannot be reached without
 * spending its attempts, from its arrival: as long as the gateway remembers
 * a carrier's webhook (a redelivery within that time is refused as a
 * replay, so a call event's job is its only copy), and for a dial, so that
 * an outage shorter than a day neither fails a queued call nor writes a
 * line per job and attempt.
 */
export const DATABASE_AWAY_RIDE_OUT_MS = 24 * 3600_000;

/** How a job that met the database away waits: `waitMs`, its pass over the outage, and whether this pass is logged. */
export interface DatabaseAwayWait {
  waitMs: number;
  passes: number;
  logged: boolean;
}

/**
 * The wait before a job that met a database it cannot reach runs again,
 * spending no attempt (1 s doubling to 30 s over its passes, jittered, as
 * the attempts' own backoff); null for any other error, a statement past
 * its timeout included (it may be the job's own doing: a row lock held),
 * and for a job that arrived more than DATABASE_AWAY_RIDE_OUT_MS ago.
 * `logged` on a job's 1st, 2nd, 4th, 8th... pass only: thousands of jobs
 * waiting out an outage write a few lines each.
 */
export function databaseAwayWait(job: { timestamp: number; attemptsStarted: number }, error: unknown, now = Date.now()): DatabaseAwayWait | null {
  if (!isDatabaseUnavailable(error, SLOW_STATEMENT) || now - job.timestamp >= DATABASE_AWAY_RIDE_OUT_MS) return null;
  // attemptsStarted counts every pass, these included: the wait grows over the outage as the attempts' backoff does.
  const passes = Math.max(1, job.attemptsStarted);
  return { waitMs: cappedExponentialBackoff(passes), passes, logged: (passes & (passes - 1)) === 0 };
}
