import { DelayedError, Job } from 'bullmq';
import { AppConfig } from '@app/config';
import { CallsQueue, RedisHeartbeat } from '@app/queue';
import { CallPlacer } from './call-placer.service';
import { PlaceCallProcessor } from './place-call.processor';
import { PlaceCallProgress, PlaceDecision } from './place-decision';

describe('PlaceCallProcessor', () => {
  const progress: Required<PlaceCallProgress> = {
    slotAt: 1_700_000_000_000,
    carrierRetries: 2,
    unsettledClaim: 'claim-a',
    resumingAs: ['claim-b'],
    claimLapses: 3,
    lateDials: 1,
    rateRefusals: 1,
    rejected: { reason: 'invalid_number', message: 'Not a number', carrierCode: '21211' },
    carrierPausedMs: 12_000,
  };

  function processorWith(decision: PlaceDecision) {
    const place = jest.fn(async () => decision);
    const processor = new PlaceCallProcessor({ place } as unknown as CallPlacer, {} as CallsQueue, {} as AppConfig, {} as RedisHeartbeat);
    const job = {
      id: 'place-call:7',
      data: { runId: 7, organizationId: 3, ...progress },
      attemptsMade: 0,
      opts: {},
      backend: { moveToDelayed: jest.fn(async () => undefined) },
    };
    return { processor, place, job, run: () => processor.process(job as unknown as Job, 'token') };
  }

  describe('a database it cannot reach', () => {
    const databaseAway = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

    function failingWith(error: Error, job: { timestamp: number; attemptsMade: number; attemptsStarted: number }) {
      const place = jest.fn(async () => Promise.reject(error));
      const giveUp = jest.fn(async () => undefined);
      const processor = new PlaceCallProcessor({ place, giveUp } as unknown as CallPlacer, {} as CallsQueue, {} as AppConfig, {} as RedisHeartbeat);
      const logged = { warn: jest.spyOn(processor['logger'], 'warn').mockImplementation(() => undefined), error: jest.spyOn(processor['logger'], 'error').mockImplementation(() => undefined) };
      const moveToDelayed = jest.fn(async () => undefined);
      const fake = { id: 'place-call:7', data: { runId: 7, organizationId: 3 }, opts: { attempts: 40 }, moveToDelayed, ...job };
      return { run: () => processor.process(fake as unknown as Job, 'token'), moveToDelayed, giveUp, logged };
    }

    it('is waited for without spending an attempt, even past the 40th, and without giving the run up', async () => {
      const { run, moveToDelayed, giveUp, logged } = failingWith(databaseAway(), { timestamp: Date.now() - 3600_000, attemptsMade: 39, attemptsStarted: 64 });
      const before = Date.now();
      await expect(run()).rejects.toBeInstanceOf(DelayedError);
      const [until, token] = moveToDelayed.mock.calls[0] as unknown as [number, string];
      expect(token).toBe('token');
      expect(until - before).toBeGreaterThanOrEqual(15_000);
      expect(until - before).toBeLessThanOrEqual(30_000 + (Date.now() - before));
      expect(giveUp).not.toHaveBeenCalled();
      // The 64th pass is one logged (a power of two), as a warning, not an error.
      expect(logged.warn).toHaveBeenCalledWith(expect.objectContaining({ run_id: 7, passes: 64 }), 'place-call waits for the database');
      expect(logged.error).not.toHaveBeenCalled();
    });

    it('writes no line on the passes between the logged ones', async () => {
      const { run, logged } = failingWith(databaseAway(), { timestamp: Date.now(), attemptsMade: 0, attemptsStarted: 5 });
      await expect(run()).rejects.toBeInstanceOf(DelayedError);
      expect(logged.warn).not.toHaveBeenCalled();
      expect(logged.error).not.toHaveBeenCalled();
    });

    it('spends attempts on any other error, a statement past its timeout included, and gives the run up on the last', async () => {
      const slow = Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
      const { run, moveToDelayed, giveUp, logged } = failingWith(slow, { timestamp: Date.now(), attemptsMade: 39, attemptsStarted: 40 });
      await expect(run()).rejects.toThrow('statement timeout');
      expect(moveToDelayed).not.toHaveBeenCalled();
      expect(giveUp).toHaveBeenCalledWith(7, 'canceling statement due to statement timeout');
      expect(logged.error).toHaveBeenCalled();
    });
  });

  it('hands the placer every field of progress the job carries', async () => {
    const { place, job, run } = processorWith({ kind: 'done', outcome: 'placed' });
    await expect(run()).resolves.toBe('placed');
    expect(place).toHaveBeenCalledWith(job.data, progress);
  });

  it("stores a delay's progress in the job, with its ids and nothing else, in the step that moves it to delayed", async () => {
    const next: PlaceCallProgress = { carrierRetries: 2, claimLapses: 4 };
    const untilMs = Date.now() + 5_000;
    const { job, run } = processorWith({ kind: 'delay', untilMs, progress: next, reason: 'claim_lapsed' });
    await expect(run()).rejects.toBeInstanceOf(DelayedError);
    const [[jobId, now, delay, token, opts]] = job.backend.moveToDelayed.mock.calls as unknown as Array<[string, number, number, string, { skipAttempt: boolean; fieldsToUpdate: { data: string } }]>;
    expect({ jobId, token, skipAttempt: opts.skipAttempt }).toEqual({ jobId: 'place-call:7', token: 'token', skipAttempt: true });
    expect(now + delay).toBe(untilMs);
    expect(JSON.parse(opts.fieldsToUpdate.data)).toEqual({ runId: 7, organizationId: 3, ...next });
    expect(job.data).toEqual({ runId: 7, organizationId: 3, ...next });
  });
});
