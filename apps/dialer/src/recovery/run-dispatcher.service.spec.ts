import { AppConfig } from '@app/config';
import { CallsQueue, RedisClient } from '@app/queue';
import { Queue } from 'bullmq';
import { DataSource } from 'typeorm';
import { RunDispatcher } from './run-dispatcher.service';

/** The dispatcher's rounds, with its reads of Postgres and Redis replaced: which kind of round each one is. */
describe('RunDispatcher rounds', () => {
  afterEach(() => {
    jest.restoreAllMocks();
    jest.useRealTimers();
  });

  function dispatcher() {
    const config = { dispatchIntervalMs: 1000 } as AppConfig;
    const made = new RunDispatcher({} as DataSource, {} as RedisClient, {} as CallsQueue, {} as Queue, config);
    const inside = made as unknown as { sweep: () => Promise<number>; checkNewRuns: () => Promise<number>; settledMark: () => Promise<number> };
    const sweep = jest.spyOn(inside, 'sweep').mockResolvedValue(0);
    const checkNewRuns = jest.spyOn(inside, 'checkNewRuns').mockResolvedValue(0);
    jest.spyOn(inside, 'settledMark').mockResolvedValue(0);
    return { made, sweep, checkNewRuns };
  }

  it('sweeps every queued run every 30 s by a monotonic clock, however the wall clock is stepped back meanwhile', async () => {
    jest.useFakeTimers({ now: 1_800_000_000_000 });
    const { made, sweep, checkNewRuns } = dispatcher();
    await made.round();
    expect(sweep).toHaveBeenCalledTimes(1);
    await made.round();
    expect(checkNewRuns).toHaveBeenCalledTimes(1);

    // NTP steps the wall clock back an hour; 30 s pass.
    const stepped = Date.now() - 3_600_000;
    jest.spyOn(Date, 'now').mockImplementation(() => stepped);
    jest.advanceTimersByTime(30_001);
    await made.round();
    expect(sweep).toHaveBeenCalledTimes(2);
  });
});
