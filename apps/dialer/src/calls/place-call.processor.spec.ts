import { DelayedError, Job } from 'bullmq';
import { AppConfig } from '@app/config';
import { CallsQueue } from '@app/queue';
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
  };

  function processorWith(decision: PlaceDecision) {
    const place = jest.fn(async () => decision);
    const processor = new PlaceCallProcessor({ place } as unknown as CallPlacer, {} as CallsQueue, {} as AppConfig);
    const job = {
      id: 'place-call:7',
      data: { runId: 7, organizationId: 3, ...progress },
      attemptsMade: 0,
      opts: {},
      updateData: jest.fn(async () => undefined),
      moveToDelayed: jest.fn(async () => undefined),
    };
    return { processor, place, job, run: () => processor.process(job as unknown as Job, 'token') };
  }

  it('hands the placer every field of progress the job carries', async () => {
    const { place, job, run } = processorWith({ kind: 'done', outcome: 'placed' });
    await expect(run()).resolves.toBe('placed');
    expect(place).toHaveBeenCalledWith(job.data, progress);
  });

  it("stores a delay's progress in the job, with its ids and nothing else, before moving it to delayed", async () => {
    const next: PlaceCallProgress = { carrierRetries: 2, claimLapses: 4 };
    const { job, run } = processorWith({ kind: 'delay', untilMs: 1_700_000_005_000, progress: next, reason: 'claim_lapsed' });
    await expect(run()).rejects.toBeInstanceOf(DelayedError);
    expect(job.updateData).toHaveBeenCalledWith({ runId: 7, organizationId: 3, ...next });
    expect(job.moveToDelayed).toHaveBeenCalledWith(1_700_000_005_000, 'token');
  });
});
