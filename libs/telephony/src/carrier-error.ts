export interface CarrierErrorOptions {
  /** Machine-readable reason, stored as the run's `end_reason` when the error ends it. */
  reason: string;
  /** A rejection that retrying cannot fix (invalid number, unauthorized account). */
  permanent: boolean;
  /** The carrier did not act on the request, so retrying cannot place a second call. */
  notProcessed: boolean;
  /** The carrier asked us to slow down (HTTP 429 or its own code for it). */
  throttled?: boolean;
  /** How long the carrier asked us to wait, when it said. */
  retryAfterMs?: number;
  carrierCode?: string;
}

/**
 * A carrier's refusal or failure, classified. Any other error thrown while
 * dialing means the outcome is unknown: the call may or may not exist.
 */
export class CarrierError extends Error {
  readonly reason: string;
  readonly permanent: boolean;
  readonly notProcessed: boolean;
  readonly throttled: boolean;
  readonly retryAfterMs?: number;
  readonly carrierCode?: string;

  constructor(message: string, options: CarrierErrorOptions) {
    super(message);
    this.name = 'CarrierError';
    this.reason = options.reason;
    this.permanent = options.permanent;
    this.notProcessed = options.notProcessed;
    this.throttled = options.throttled ?? false;
    this.retryAfterMs = options.retryAfterMs;
    this.carrierCode = options.carrierCode;
  }
}
