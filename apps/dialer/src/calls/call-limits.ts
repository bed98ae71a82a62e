/**
 * How long an answered call is given past its maximum duration before the
 * reaper ends it, and so what a concurrency slot's lease allows past the
 * rest of a call's life: one figure for both, so the slot never lapses
 * under a call the reaper still counts as live.
 */
export const ANSWERED_CALL_GRACE_SECONDS = 60;
