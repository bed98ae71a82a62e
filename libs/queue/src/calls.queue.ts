import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import { Queue } from 'bullmq';
import { JobPolicy } from './job-policies';
import { JobName, PlaceCallJob, placeCallJobId } from './jobs';
import { QueueName } from './queue-names';

/** Producer side of the `calls` queue. The job id is derived from the run, so enqueueing twice is harmless. */
@Injectable()
export class CallsQueue {
  constructor(@InjectQueue(QueueName.Calls) private readonly queue: Queue<PlaceCallJob>) {}

  async enqueuePlaceCall(jobs: PlaceCallJob[]): Promise<void> {
    if (jobs.length === 0) return;
    await this.queue.addBulk(
      jobs.map((job) => ({
        name: JobName.PlaceCall,
        data: job,
        opts: { ...JobPolicy.placeCall, jobId: placeCallJobId(job.runId) },
      })),
    );
  }

  /**
   * Drops the dial job of a run that will not be dialed (canceled while
   * queued): it would only wake, reserve a pacing instant and find its run
   * gone. A job a dialer holds right now is left (it finds the run canceled
   * at its claim). Answers whether the job was dropped.
   */
  async discardPlaceCall(runId: number): Promise<boolean> {
    return (await this.queue.remove(placeCallJobId(runId))) === 1;
  }

  /**
   * The data of a run's dial job that is still to run or running (waiting,
   * delayed, active), with what its attempts noted in it; null when there is
   * none, or it has finished (completed, or failed for good).
   */
  async pendingPlaceCall(runId: number): Promise<(PlaceCallJob & Record<string, unknown>) | null> {
    const job = await this.queue.getJob(placeCallJobId(runId));
    return job && !job.finishedOn ? (job.data as PlaceCallJob & Record<string, unknown>) : null;
  }
}
