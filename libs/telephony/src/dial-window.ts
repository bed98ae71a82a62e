import { DialAttempt } from './telephony-provider';

/** How far outside the dial request a call's creation may lie: clock skew, and times kept to the second. */
const SLACK_MS = 15_000;

/**
 * When the call a dial created can have been created: between sending the
 * request and giving up on it, with some slack. Carriers that keep nothing of
 * ours on a call are searched by the dial's numbers within this window.
 */
export class DialWindow {
  readonly earliest: number;
  readonly latest: number;

  constructor(dial: DialAttempt, requestTimeoutMs: number) {
    this.earliest = dial.attemptedAt.getTime() - SLACK_MS;
    this.latest = dial.attemptedAt.getTime() + requestTimeoutMs + SLACK_MS;
  }

  contains(ms: number): boolean {
    return ms >= this.earliest && ms <= this.latest;
  }

  /**
   * The dial's call among the candidates (keyed by the carrier's call id, so a
   * call seen by two reads counts once): the only one, else null. None or
   * several, and nothing tells which is ours: never a guess.
   */
  static onlyCall<T>(candidates: Map<string, T>): T | null {
    return candidates.size === 1 ? [...candidates.values()][0] : null;
  }
}
