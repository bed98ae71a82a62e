/**
 * A carrier's refusal or failure. `permanent` ones end the run (invalid
 * number, unauthorized account); the rest are retried with backoff.
 * `notProcessed` means the carrier did not act on the request, so a retry
 * cannot place a second call.
 */
export class CarrierError extends Error {
  constructor(
    message: string,
    readonly reason: string,
    readonly permanent: boolean,
    readonly notProcessed: boolean,
    readonly carrierCode?: string,
  ) {
    super(message);
    this.name = 'CarrierError';
  }
}
