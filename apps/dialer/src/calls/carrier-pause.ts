import { Injectable, Logger } from '@nestjs/common';
import { doublingDelay, RecentMap } from '@app/common';

/** Dial requests to one configuration's carrier that got no answer, within UNANSWERED_WINDOW_MS, that pause its dials. */
export const UNANSWERED_BEFORE_PAUSE = 3;
const UNANSWERED_WINDOW_MS = 30_000;
/** The first pause, doubled with each pause in a row, up to the cap. */
const PAUSE_FIRST_MS = 5_000;
const PAUSE_CAP_MS = 60_000;
/**
 * After a pause, one dial (the probe) goes out first, alone, for this long
 * at most: past a request's 15 s timeout and the admission and claim before
 * it, so a probe that got no answer has paused the dials again by then. One
 * that never reached the carrier (sent back to wait for a slot) lets
 * another through once it runs out.
 */
const PROBE_MS = 30_000;
/** A pause no dial has asked about for this long is forgotten: the next dials go out as if it had never been. */
const FORGOTTEN_AFTER_MS = 5 * 60_000;
/** Configurations remembered (the oldest forgotten first: its dials then go out as if it never failed). */
const CONFIGURATIONS_LIMIT = 10_000;

/** `CarrierPause.ask`'s answer. */
export interface PauseAnswer {
  /** How long the dial is to wait: for the pause to end, or for the probe's answer. */
  waitMs: number;
  /** The dial may go only as the probe (`takeProbe`). */
  probe: boolean;
}

const OPEN: PauseAnswer = { waitMs: 0, probe: false };

interface CarrierState {
  /** When the dial requests that got no answer were sent (`performance.now()` ms), the latest UNANSWERED_BEFORE_PAUSE. */
  unanswered: number[];
  pauses: number;
  pausedUntil: number;
  /** The run whose dial is the probe, while it may be in flight (until `probeUntil`). */
  probeRunId: number | null;
  probeUntil: number;
  /** When a dial last asked (`ask`). */
  askedAt: number;
  /** When a dial was last answered: dials sent before then that fail later are no news. */
  answeredAt: number;
}

/**
 * Each configuration's carrier as this dialer found it answering dials. A
 * carrier that stops answering (its API hangs: each request waits out its
 * 15 s timeout, and the look-up after it as long again) would otherwise
 * hold every one of the dialer's workers, and every organization's calls,
 * on other carriers and accounts too, would wait behind its jobs. Past
 * UNANSWERED_BEFORE_PAUSE requests without an answer, that configuration's
 * dials wait (`ask`), without spending an attempt; then one goes
 * out alone, and its answer, or its lack of one, opens the way again or
 * pauses them longer. Only requests that reached no answer after they were
 * sent count (a timeout, a reset): a refused connection fails at once and
 * holds no worker. Dials sent before a pause ended are not its probe: their
 * lack of answer is what paused it, not news.
 */
@Injectable()
export class CarrierPause {
  private readonly logger = new Logger(CarrierPause.name);
  private readonly states = new RecentMap<number, CarrierState>(CONFIGURATIONS_LIMIT);
  /** A monotonic clock (tests set their own). */
  now: () => number = () => performance.now();

  /**
   * Whether the run's dial may go out: `waitMs` 0 when it may; else how long
   * to wait, for the pause to end or for the probe's turn to. After
   * a pause, `probe`: the dial may go only as the probe, once admitted (its
   * pacing instant due, a slot taken) and `takeProbe` gave it the turn. The
   * turn goes to a dial that can go now, not to the first to ask, which may
   * be paced minutes ahead behind a campaign's instants: held by it, no dial
   * would probe the carrier, and every other would wait turn after turn.
   */
  ask(configurationId: number, runId: number): PauseAnswer {
    const state = this.states.get(configurationId);
    if (!state || state.pauses === 0) return OPEN;
    const now = this.now();
    if (now - state.askedAt > FORGOTTEN_AFTER_MS && now >= state.pausedUntil) {
      this.states.delete(configurationId);
      return OPEN;
    }
    state.askedAt = now;
    if (now < state.pausedUntil) return { waitMs: state.pausedUntil - now, probe: false };
    if (now < state.probeUntil && state.probeRunId !== runId) return { waitMs: state.probeUntil - now, probe: false };
    return { waitMs: 0, probe: true };
  }

  /**
   * Gives the probe's turn to the run, admitted and about to dial: true when
   * it may dial (the turn was free, or is its own already, or the carrier
   * answered meanwhile), false when another dial took it, or the dials were
   * paused again, since it asked.
   */
  takeProbe(configurationId: number, runId: number): boolean {
    const state = this.states.get(configurationId);
    if (!state || state.pauses === 0) return true;
    const now = this.now();
    if (now < state.pausedUntil) return false;
    if (now < state.probeUntil) return state.probeRunId === runId;
    state.probeRunId = runId;
    state.probeUntil = now + PROBE_MS;
    return true;
  }

  /** The carrier answered a dial of the configuration (with a call, or a refusal of its own). */
  answered(configurationId: number): void {
    const state = this.states.get(configurationId);
    if (!state) return;
    if (state.pauses > 0) this.logger.log({ telephony_configuration_id: configurationId }, "the configuration's carrier answers again: its dials go out");
    const now = this.now();
    this.states.set(configurationId, { ...fresh(now), answeredAt: now });
  }

  /**
   * A dial of the configuration sent at `sentAt` failed at once, its
   * connection refused (or its host not found): such failures hold no
   * worker, so they pause nothing, and a pause under way (this dial its
   * probe, say) is over: its dials go out and spend their own retries.
   */
  refusedAtOnce(configurationId: number, sentAt: number): void {
    const state = this.states.get(configurationId);
    // Sent before the pause ended (it had passed the check before the pause), or before the carrier last answered: no
    // news of the carrier as the probe finds it.
    if (!state || state.pauses === 0 || sentAt < state.pausedUntil || sentAt < state.answeredAt) return;
    this.logger.log({ telephony_configuration_id: configurationId }, "the configuration's carrier refuses connections at once: its dials go out, each spending its own retries");
    this.states.set(configurationId, { ...fresh(this.now()), answeredAt: state.answeredAt });
  }

  /** A dial of the configuration sent at `sentAt` (`now()`'s clock) got no answer from its carrier. */
  unanswered(configurationId: number, sentAt: number): void {
    const now = this.now();
    const state = this.states.get(configurationId) ?? fresh(now);
    // Sent before the carrier last answered: its lack of an answer is older news than that answer.
    if (sentAt < state.answeredAt) return;
    if (state.pauses > 0) {
      // Sent while paused (it had passed the check before the pause) or before: what paused the dials already.
      if (sentAt < state.pausedUntil) return;
      // The probe, or a dial sent after it: no answer still.
      this.pause(configurationId, state, now);
    } else {
      state.unanswered = [...state.unanswered.filter((at) => now - at < UNANSWERED_WINDOW_MS), sentAt].slice(-UNANSWERED_BEFORE_PAUSE);
      if (state.unanswered.length >= UNANSWERED_BEFORE_PAUSE) this.pause(configurationId, state, now);
    }
    this.states.set(configurationId, state);
  }

  private pause(configurationId: number, state: CarrierState, now: number): void {
    state.pauses += 1;
    const pauseMs = doublingDelay(PAUSE_FIRST_MS, state.pauses, PAUSE_CAP_MS);
    state.pausedUntil = now + pauseMs;
    state.probeRunId = null;
    state.probeUntil = 0;
    state.askedAt = now;
    this.logger.warn(
      { telephony_configuration_id: configurationId, pause_ms: pauseMs, pauses: state.pauses },
      "the configuration's carrier did not answer dial requests: its dials wait, then one goes out alone",
    );
  }
}

function fresh(now: number): CarrierState {
  return { unanswered: [], pauses: 0, pausedUntil: 0, probeRunId: null, probeUntil: 0, askedAt: now, answeredAt: -Infinity };
}
