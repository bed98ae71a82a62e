import { Job } from 'bullmq';

/** The one step of BullMQ's queue backend this needs; the job holds it, though its typing keeps it protected. */
interface DelayingBackend {
  moveToDelayed(
    jobId: string,
    timestamp: number,
    delay: number,
    token?: string,
    opts?: { skipAttempt?: boolean; fieldsToUpdate?: Record<string, string> },
  ): Promise<unknown>;
}

/**
 * Sends a job its worker holds back to wait until `untilMs`, without
 * spending an attempt, with `data` in place of its own, in one step that
 * checks the job's lock first (BullMQ's `moveToDelayed` script). Written
 * apart (`updateData`, then `moveToDelayed`), the data was written whether
 * or not the lock was still this worker's: a dialer cut off from Redis past
 * its lock, whose job another dialer had taken over meanwhile, overwrote
 * that dialer's data (an unsettled claim, a backlog mark) when it came back,
 * and only then found the lock gone.
 */
export async function delayWithData<T>(job: Job<T>, data: T, untilMs: number, token?: string): Promise<void> {
  const now = Date.now();
  const backend = (job as unknown as { backend: DelayingBackend }).backend;
  await backend.moveToDelayed(job.id!, now, Math.max(0, untilMs - now), token, {
    skipAttempt: true,
    fieldsToUpdate: { data: JSON.stringify(data) },
  });
  job.data = data;
}
