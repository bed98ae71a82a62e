import { Logger } from '@nestjs/common';
import { CarrierPause, UNANSWERED_BEFORE_PAUSE } from './carrier-pause';

describe('CarrierPause', () => {
  let now: number;
  let pause: CarrierPause;

  beforeEach(() => {
    now = 1_000_000;
    pause = new CarrierPause();
    pause.now = () => now;
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });
  afterEach(() => jest.restoreAllMocks());

  /**
   * A dial of the run that is due (admitted) asking to go: 0 when it may (taking the probe's turn when there is
   * one to take), else how long it is to wait.
   */
  const dialNow = (configurationId: number, runId: number): number => {
    const answer = pause.ask(configurationId, runId);
    if (answer.waitMs > 0) return answer.waitMs;
    if (answer.probe && !pause.takeProbe(configurationId, runId)) throw new Error('the turn was free when asked, and taken before it was wanted');
    return 0;
  };

  /** `times` dials of configuration 1 sent now that got no answer. */
  const unansweredNow = (times: number) => {
    for (let i = 0; i < times; i++) pause.unanswered(1, now);
  };

  it("lets dials go until enough got no answer within 30 s, then pauses that configuration's alone", () => {
    unansweredNow(UNANSWERED_BEFORE_PAUSE - 1);
    expect(dialNow(1, 10)).toBe(0);
    unansweredNow(1);
    expect(dialNow(1, 10)).toBe(5_000);
    expect(dialNow(2, 20)).toBe(0);
  });

  it('forgets requests that got no answer longer than 30 s ago, and all of them once the carrier answers', () => {
    unansweredNow(UNANSWERED_BEFORE_PAUSE - 1);
    now += 30_000;
    unansweredNow(1);
    expect(dialNow(1, 10)).toBe(0);
    pause.answered(1);
    unansweredNow(UNANSWERED_BEFORE_PAUSE - 1);
    expect(dialNow(1, 10)).toBe(0);
  });

  it('after the pause lets one dial out alone, again when it comes back, and pauses twice as long when it gets no answer', () => {
    unansweredNow(UNANSWERED_BEFORE_PAUSE);
    now += 5_000;
    expect(dialNow(1, 10)).toBe(0); // run 10's dial is the probe
    expect(dialNow(1, 11)).toBe(30_000); // the others wait for its answer
    now += 1_000;
    expect(dialNow(1, 10)).toBe(0); // sent back to wait for a slot, it goes when it returns
    const probeSent = now;
    now += 15_000;
    pause.unanswered(1, probeSent);
    expect(dialNow(1, 11)).toBe(10_000);
    // Doubling up to a minute.
    for (let round = 0; round < 5; round++) {
      now += dialNow(1, 10);
      expect(dialNow(1, 10)).toBe(0);
      pause.unanswered(1, now);
    }
    expect(dialNow(1, 10)).toBe(60_000);
  });

  it('does not take the dials sent before the pause ended, failing late, for its probe', () => {
    const sentBefore = now;
    unansweredNow(UNANSWERED_BEFORE_PAUSE);
    now += 6_000;
    expect(dialNow(1, 10)).toBe(0); // the probe
    // Dials in flight when the pause began time out now, after it ended: no news, and the probe's turn goes on.
    for (let i = 0; i < 5; i++) pause.unanswered(1, sentBefore + 100);
    expect(dialNow(1, 10)).toBe(0);
    expect(dialNow(1, 11)).toBeGreaterThan(0);
  });

  it('does not pause again for dials sent before the carrier answered that fail after it', () => {
    const sentBefore = now;
    unansweredNow(UNANSWERED_BEFORE_PAUSE);
    now += 5_000;
    expect(dialNow(1, 10)).toBe(0);
    now += 1_000;
    pause.answered(1);
    for (let i = 0; i < UNANSWERED_BEFORE_PAUSE; i++) pause.unanswered(1, sentBefore + 4_000);
    expect(dialNow(1, 11)).toBe(0);
    // Dials sent after the answer count again.
    unansweredNow(UNANSWERED_BEFORE_PAUSE);
    expect(dialNow(1, 11)).toBe(5_000);
  });

  it("opens the way again when a dial is answered, lets another probe out when the first never dialed, and forgets a pause no dial asked about", () => {
    unansweredNow(UNANSWERED_BEFORE_PAUSE);
    now += 5_000;
    expect(dialNow(1, 10)).toBe(0);
    // That one never asked the carrier (its run was canceled): 30 s later another goes.
    now += 30_000;
    expect(dialNow(1, 11)).toBe(0);
    pause.answered(1);
    expect(dialNow(1, 12)).toBe(0);
    expect(dialNow(1, 13)).toBe(0);

    unansweredNow(UNANSWERED_BEFORE_PAUSE);
    now += 5 * 60_000 + 1;
    expect(dialNow(1, 14)).toBe(0);
    expect(dialNow(1, 15)).toBe(0);
  });

  it("gives the probe's turn to a dial that can go now, not to one that asked and was then paced ahead", () => {
    unansweredNow(UNANSWERED_BEFORE_PAUSE);
    now += 5_000;
    // Run 10 may probe, but its admission sends it minutes ahead (its pacing instant): it takes no turn.
    expect(pause.ask(1, 10)).toEqual({ waitMs: 0, probe: true });
    // Run 11, due now, asks, is admitted and probes; run 10 asking again waits for that probe's answer.
    expect(pause.ask(1, 11)).toEqual({ waitMs: 0, probe: true });
    expect(pause.takeProbe(1, 11)).toBe(true);
    expect(pause.ask(1, 10)).toEqual({ waitMs: 30_000, probe: false });
    // Run 10 had asked when the turn was free: admitted now, it finds the turn taken.
    expect(pause.takeProbe(1, 10)).toBe(false);
    expect(pause.takeProbe(1, 11)).toBe(true);
  });

  it('turns a dial away once the probe is taken, or once the dials were paused again before it was admitted', () => {
    unansweredNow(UNANSWERED_BEFORE_PAUSE);
    expect(pause.ask(1, 10)).toEqual({ waitMs: 5_000, probe: false });
    now += 5_000;
    expect(pause.takeProbe(1, 11)).toBe(true);
    expect(pause.ask(1, 10)).toMatchObject({ probe: false });
    // Paused again (the probe got no answer) before a dial that asked was admitted: it may not go.
    pause.unanswered(1, now);
    expect(pause.takeProbe(1, 12)).toBe(false);
  });

  it('ends a pause when a dial finds the carrier refusing connections at once: such failures hold no worker', () => {
    unansweredNow(UNANSWERED_BEFORE_PAUSE);
    now += 5_000;
    expect(pause.takeProbe(1, 10)).toBe(true);
    expect(pause.ask(1, 11).waitMs).toBe(30_000);
    // A dial sent before the pause ended, refused only now, is no news of the carrier.
    pause.refusedAtOnce(1, now - 6_000);
    expect(pause.ask(1, 11).waitMs).toBe(30_000);
    pause.refusedAtOnce(1, now);
    expect(pause.ask(1, 11)).toEqual({ waitMs: 0, probe: false });
    expect(pause.ask(1, 12)).toEqual({ waitMs: 0, probe: false });
  });
});

