/** What a place-call job carries between its tries, besides the ids. */
export interface PlaceCallProgress {
  /** The pacing instant reserved for this call (epoch ms). */
  slotAt?: number;
  /** Carrier refusals so far (throttled or not processed); they do not spend job attempts. */
  carrierRetries?: number;
}

export type PlaceDecision =
  | { kind: 'done'; outcome: 'placed' | 'skipped' | 'failed' | 'unknown' }
  /** Come back at `untilMs` with `progress`; the job is delayed, not failed. */
  | { kind: 'delay'; untilMs: number; progress: PlaceCallProgress; reason: string };
