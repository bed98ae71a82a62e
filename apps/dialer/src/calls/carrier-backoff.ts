import { doublingDelay } from '@app/common';

/** The longest a refusal's own backoff grows to (0.5 s doubled per refusal). */
export const CARRIER_BACKOFF_CAP_MS = 60_000;
/**
 * The longest a carrier's Retry-After is waited for. A day (or a date years
 * ahead) from a gateway in front of a carrier would leave the run `queued`
 * with its job delayed that long, though its refusals are counted to give up.
 */
export const MAX_RETRY_AFTER_MS = 5 * 60_000;

/**
 * How long a dial the carrier refused unprocessed for the `refusals`-th time
 * waits: a random 50–100 % of its doubling backoff (so the dials refused
 * together do not come back together), and never less than the carrier's
 * Retry-After (up to MAX_RETRY_AFTER_MS), spread over the half of it after.
 */
export function carrierRetryDelayMs(refusals: number, retryAfterMs?: number, random: () => number = Math.random): number {
  const backoff = doublingDelay(500, refusals, CARRIER_BACKOFF_CAP_MS);
  const own = backoff * (0.5 + random() * 0.5);
  if (retryAfterMs === undefined || !Number.isFinite(retryAfterMs) || retryAfterMs <= 0) return Math.round(own);
  const asked = Math.min(retryAfterMs, MAX_RETRY_AFTER_MS);
  return Math.round(Math.max(own, asked * (1 + random() * 0.5)));
}
