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

  const unansweredTimes = (configurationId: number, times: number) => {
    for (let i = 0; i < times; i++) pause.unanswered(configurationId);
  };

  it("lets dials go until enough got no answer within 30 s, then pauses that configuration's alone", () => {
    unansweredTimes(1, UNANSWERED_BEFORE_PAUSE - 1);
    expect(pause.remainingMs(1)).toBe(0);
    pause.unanswered(1);
    expect(pause.remainingMs(1)).toBe(5_000);
    expect(pause.remainingMs(2)).toBe(0);
  });

  it('forgets requests that got no answer longer than 30 s ago, and all of them once the carrier answers', () => {
    unansweredTimes(1, UNANSWERED_BEFORE_PAUSE - 1);
    now += 30_000;
    pause.unanswered(1);
    expect(pause.remainingMs(1)).toBe(0);
    pause.answered(1);
    unansweredTimes(1, UNANSWERED_BEFORE_PAUSE - 1);
    expect(pause.remainingMs(1)).toBe(0);
  });

  it('after the pause lets one dial out alone, and pauses twice as long when it gets no answer either', () => {
    unansweredTimes(1, UNANSWERED_BEFORE_PAUSE);
    now += 5_000;
    expect(pause.remainingMs(1)).toBe(0); // the probe
    expect(pause.remainingMs(1)).toBe(20_000); // the others wait for its answer
    now += 15_000;
    pause.unanswered(1);
    expect(pause.remainingMs(1)).toBe(10_000);
    // Doubling up to a minute.
    for (let round = 0; round < 5; round++) {
      now += pause.remainingMs(1);
      expect(pause.remainingMs(1)).toBe(0);
      pause.unanswered(1);
    }
    expect(pause.remainingMs(1)).toBe(60_000);
  });

  it("opens the way again when the probe's dial is answered, and lets another probe out when the first never dialed", () => {
    unansweredTimes(1, UNANSWERED_BEFORE_PAUSE);
    now += 5_000;
    expect(pause.remainingMs(1)).toBe(0);
    // That one was sent back to wait for its pacing instant, and never asked the carrier: 20 s later another goes.
    now += 20_000;
    expect(pause.remainingMs(1)).toBe(0);
    pause.answered(1);
    expect(pause.remainingMs(1)).toBe(0);
    expect(pause.remainingMs(1)).toBe(0);
  });
});
