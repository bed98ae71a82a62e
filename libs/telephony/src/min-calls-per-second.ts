/**
 * The slowest pace a telephony configuration may set: one call every 1,000 s.
 * The API refuses a slower `calls_per_second`, and the dialer's admission
 * holds a row stored before that check to it: far slower rates made its
 * rolling window a number Redis refuses, so every dial of the configuration failed.
 */
export const MIN_CALLS_PER_SECOND = 0.001;
