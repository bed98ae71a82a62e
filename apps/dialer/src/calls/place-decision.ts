/** What a place-call job carries between its tries, besides the ids. */
export interface PlaceCallProgress {
  /** The pacing instant reserved for this call (epoch ms). */
  slotAt?: number;
  /** Carrier refusals so far (throttled or not processed); they do not spend job attempts. */
  carrierRetries?: number;
  /**
   * The id of this job's own claim of the run when no dial went out under it
   * and the run could not be handed back: the claim's answer was lost (the
   * connection failed as it committed, or not), or a write after it failed
   * before the dial or after the carrier refused it unprocessed. A run found
   * `dialing` without a call under this claim is taken up (`resumeClaim`)
   * instead of left to the reaper, which could only end it unknown.
   */
  unsettledClaim?: string;
  /**
   * The ids resumes of `unsettledClaim` were sent under when their answers
   * were lost too: the run's latest claim is then one of these, and any is
   * taken up. Each resume is a claim of its own, so a job whose dial may have
   * left (a retry after an error, a copy of a stalled job) holds none of them.
   */
  resumingAs?: string[];
  /**
   * Claims of this job's that lapsed before their dial (`DIAL_CLAIM_LEASE_MS`):
   * each hands the run back and waits twice as long as the one before, up to
   * a minute, so a database slower than the lease does not have the run
   * claimed and handed back (two log entries each time) every two seconds.
   * Dropped once a dial goes out; kept in the job's data only, so a copy of
   * the job made after a lost lock starts again from none.
   */
  claimLapses?: number;
  /**
   * Dials of this job's handed back for going out more than DIAL_LATE_MS
   * after their admission into a rate window that was full when they were
   * admitted again; past MAX_LATE_DIALS the next goes out however late.
   * Kept in the job's data only, as `claimLapses`.
   */
  lateDials?: number;
  /**
   * Refusals in a row of room in the rate window on the pacing instant
   * `slotAt` (RATE_REFUSALS_BEFORE_PACING_AGAIN).
   */
  rateRefusals?: number;
  /**
   * How long this job has waited for its configuration's carrier to answer
   * dials again (`CarrierPause`), in all: past MAX_CARRIER_PAUSED_MS its
   * run ends `failed` (`carrier_unresponsive`) without a dial, so a carrier
   * that never answers again does not keep the run `queued` for good.
   */
  carrierPausedMs?: number;
  /**
   * With `unsettledClaim`: the carrier rejected the dial sent under that claim
   * for good, and the run could not be ended then. The job comes back to end
   * it under the claim, with the carrier's answer, and sends no dial again.
   */
  rejected?: { reason: string; message: string; carrierCode: string | null };
}

export type PlaceDecision =
  | { kind: 'done'; outcome: 'placed' | 'skipped' | 'failed' | 'unknown' }
  /** Come back at `untilMs` with `progress`; the job is delayed, not failed. */
  | { kind: 'delay'; untilMs: number; progress: PlaceCallProgress; reason: string };
