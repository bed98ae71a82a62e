import { AppConfig } from '@app/config';
import { CallEventJob, DATABASE_AWAY_RIDE_OUT_MS, RedisHeartbeat } from '@app/queue';
import { DelayedError, Job } from 'bullmq';
import { CallEventApplier } from './call-event-applier.service';
import { CallEventsProcessor } from './call-events.processor';
import { RecordingFetchesBusy } from './run-artifacts-collector.service';

describe('CallEventsProcessor', () => {
  const databaseAway = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

  function setUp(error: Error, job: { timestamp: number; attemptsMade: number; attemptsStarted: number }) {
    const applier = { applyJob: jest.fn(async () => Promise.reject(error)) } as unknown as CallEventApplier;
    const processor = new CallEventsProcessor(applier, { dialerConcurrency: 1 } as AppConfig, {} as RedisHeartbeat);
    const moveToDelayed = jest.fn(async () => undefined);
    const fake = { id: 'run-1-completed', data: { runId: 1, type: 'completed' }, opts: { attempts: 40 }, moveToDelayed, ...job };
    return { run: () => processor.process(fake as unknown as Job<CallEventJob>, 'token'), moveToDelayed };
  }

  it('waits for a database it cannot reach without spending an attempt, even past its 40th', async () => {
    const { run, moveToDelayed } = setUp(databaseAway(), { timestamp: Date.now() - 3600_000, attemptsMade: 39, attemptsStarted: 300 });
    const before = Date.now();

    await expect(run()).rejects.toBeInstanceOf(DelayedError);

    expect(moveToDelayed).toHaveBeenCalledTimes(1);
    const [until, token] = moveToDelayed.mock.calls[0] as unknown as [number, string];
    expect(token).toBe('token');
    // 30 s at most, half of it at least (its jitter).
    expect(until - before).toBeGreaterThanOrEqual(15_000);
    expect(until - before).toBeLessThanOrEqual(30_000 + (Date.now() - before));
  });

  it('waits 1 s or less on the first pass, the wait growing with the passes', async () => {
    const first = setUp(databaseAway(), { timestamp: Date.now(), attemptsMade: 0, attemptsStarted: 1 });
    const before = Date.now();
    await expect(first.run()).rejects.toBeInstanceOf(DelayedError);
    const [until] = first.moveToDelayed.mock.calls[0] as unknown as [number];
    expect(until - before).toBeLessThanOrEqual(1_000 + (Date.now() - before));
  });

  it('spends its attempts again once the gateway has forgotten the webhook, and on any other error, a slow statement included', async () => {
    const old = setUp(databaseAway(), { timestamp: Date.now() - DATABASE_AWAY_RIDE_OUT_MS - 1, attemptsMade: 3, attemptsStarted: 9 });
    await expect(old.run()).rejects.toThrow('ECONNREFUSED');
    expect(old.moveToDelayed).not.toHaveBeenCalled();

    const other = setUp(new Error('column "x" does not exist'), { timestamp: Date.now(), attemptsMade: 0, attemptsStarted: 1 });
    await expect(other.run()).rejects.toThrow('column "x" does not exist');
    expect(other.moveToDelayed).not.toHaveBeenCalled();

    // A statement past its timeout may be this event's own doing (a row lock held): it spends attempts too.
    const slow = Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
    const timedOut = setUp(slow, { timestamp: Date.now(), attemptsMade: 0, attemptsStarted: 1 });
    await expect(timedOut.run()).rejects.toThrow('statement timeout');
    expect(timedOut.moveToDelayed).not.toHaveBeenCalled();
  });

  it('sends an event whose recording found every fetch taken back to its queue for a few seconds, no attempt spent', async () => {
    const busy = new RecordingFetchesBusy(1);
    const { run, moveToDelayed } = setUp(busy, { timestamp: Date.now(), attemptsMade: 39, attemptsStarted: 50 });
    await expect(run()).rejects.toBeInstanceOf(DelayedError);
    expect(moveToDelayed).toHaveBeenCalledWith(busy.untilMs, 'token');
  });
});

