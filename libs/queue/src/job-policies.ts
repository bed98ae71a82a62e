import { JobsOptions } from 'bullmq';

/** Retry and retention per job, named once here rather than at call sites. */
export const JobPolicy = {
  placeCall: {
    attempts: 8,
    backoff: { type: 'exponential', delay: 1000 },
    removeOnComplete: { age: 3600, count: 10000 },
    removeOnFail: { age: 7 * 24 * 3600 },
  },
  callEvent: {
    attempts: 10,
    backoff: { type: 'exponential', delay: 500 },
    removeOnComplete: { age: 3600, count: 10000 },
    removeOnFail: { age: 7 * 24 * 3600 },
  },
} as const satisfies Record<string, JobsOptions>;
