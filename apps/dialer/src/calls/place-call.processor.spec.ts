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
