import { Injectable, Logger } from '@nestjs/common';
import { doublingDelay, RecentMap } from '@app/common';

/** Dial requests to one configuration's carrier that got no answer, within UNANSWERED_WINDOW_MS, that pause its dials. */
export const UNANSWERED_BEFORE_PAUSE = 3;
const UNANSWERED_WINDOW_MS = 30_000;
/** The first pause, doubled with each pause in a row, up to the cap. */
const PAUSE_FIRST_MS = 5_000;
const PAUSE_CAP_MS = 60_000;
/**
 * After a pause, one dial goes out first, alone, for this long at most: past
 * a request's 15 s timeout, so a probe that got no answer either paused the
 * dials again or is over. One that never reached the carrier (sent back to
 * wait for its pacing instant) lets another through once it runs out.
 */
const PROBE_MS = 20_000;
/** Configurations remembered (the oldest forgotten first: its dials then go out as if it never failed). */
const CONFIGURATIONS_LIMIT = 10_000;

interface CarrierState {
  /** When the dial requests that got no answer went out (`performance.now()` ms), the oldest first. */
  unanswered: number[];
  pauses: number;
  pausedUntil: number;
  /** While a probe's dial may be in flight, the others wait for its answer. */
  probeUntil: number;
}

/**
 * Each configuration's carrier as this dialer found it answering dials. A
 * carrier that stops answering (its API hangs: each request waits out its
 * 15 s timeout, and the look-up after it as long again) would otherwise
 * hold every one of the dialer's workers, and every organization's calls,
 * on other carriers and accounts too, would wait behind its jobs. Past
 * UNANSWERED_BEFORE_PAUSE requests without an answer, that configuration's
 * dials wait (`remainingMs`), without spending an attempt; then one goes
 * out alone, and its answer, or its lack of one, opens the way again or
 * pauses them longer. A carrier that answers anything at all, a refusal or
 * a 5xx, is answering: only requests that got no answer (a timeout, a
 * reset, no connection) count.
 */
@Injectable()
export class CarrierPause {
  private readonly logger = new Logger(CarrierPause.name);
  private readonly states = new RecentMap<number, CarrierState>(CONFIGURATIONS_LIMIT);
  /** A monotonic clock (tests set their own). */
  now: () => number = () => performance.now();

  /**
   * How long a dial of the configuration is to wait before it goes out: 0
   * for one that may go now (and, after a pause, takes the probe's turn).
   */
  remainingMs(configurationId: number): number {
    const state = this.states.get(configurationId);
    if (!state || state.pauses === 0) return 0;
    const now = this.now();
    if (now < state.pausedUntil) return state.pausedUntil - now;
    if (now < state.probeUntil) return state.probeUntil - now;
    state.probeUntil = now + PROBE_MS;
    return 0;
  }

  /** The carrier answered a dial of the configuration (with a call, a refusal, an error of its own). */
  answered(configurationId: number): void {
    const state = this.states.get(configurationId);
    if (!state) return;
    if (state.pauses > 0) this.logger.log({ telephony_configuration_id: configurationId }, "the configuration's carrier answers again: its dials go out");
    this.states.delete(configurationId);
  }

  /** A dial of the configuration got no answer from its carrier. */
  unanswered(configurationId: number): void {
    const now = this.now();
    const state = this.states.get(configurationId) ?? { unanswered: [], pauses: 0, pausedUntil: 0, probeUntil: 0 };
    state.unanswered = [...state.unanswered.filter((at) => now - at < UNANSWERED_WINDOW_MS), now].slice(-UNANSWERED_BEFORE_PAUSE);
    // A probe's failure pauses again at once; otherwise enough failures in the window do, unless a pause is on.
    const probeFailed = state.pauses > 0 && now >= state.pausedUntil;
    if (probeFailed || (state.pauses === 0 && state.unanswered.length >= UNANSWERED_BEFORE_PAUSE)) {
      state.pauses += 1;
      const pauseMs = doublingDelay(PAUSE_FIRST_MS, state.pauses, PAUSE_CAP_MS);
      state.pausedUntil = now + pauseMs;
      state.probeUntil = 0;
      this.logger.warn(
        { telephony_configuration_id: configurationId, pause_ms: pauseMs, pauses: state.pauses },
        "the configuration's carrier did not answer dial requests: its dials wait, then one goes out alone",
      );
    }
    this.states.set(configurationId, state);
  }
}
