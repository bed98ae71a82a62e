import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import { Job, Queue } from 'bullmq';
import { DialBacklogs } from './dial-backlogs';
import { JobPolicy } from './job-policies';
import { JobName, PlaceCallJob, placeCallJobId } from './jobs';
import { QueueName } from './queue-names';

/**
 * Producer side of the `calls` queue. The job id is derived from the run, so
 * enqueueing twice is harmless. Each job is prioritized by its band in its
 * organization's backlog (`DialBacklogs`).
 */
@Injectable()
export class CallsQueue {
  constructor(
    @InjectQueue(QueueName.Calls) private readonly queue: Queue<PlaceCallJob>,
    private readonly backlogs: DialBacklogs,
  ) {}

  /**
   * `bands`: each job's band, counted in already (`countIn`, with the jobs'
   * organizations in the same order); without them the jobs are counted in
   * here. A job whose run already has one is not added again, but it is
   * counted in: the count errs towards a longer backlog (a later band) until
   * the organization's count expires, never towards taking a campaign for a
   * single call.
   */
  async enqueuePlaceCall(jobs: PlaceCallJob[], bands?: readonly number[]): Promise<void> {
    if (jobs.length === 0) return;
    const priorities = bands ?? (await this.countIn(jobs.map((job) => job.organizationId)));
    await this.queue.addBulk(
      jobs.map((job, index) => ({
        name: JobName.PlaceCall,
        data: { ...job, inBacklog: true },
        opts: { ...JobPolicy.placeCall, jobId: placeCallJobId(job.runId), priority: priorities[index] },
      })),
    );
  }

  /** Counts jobs about to be enqueued (one organization id each) into their organizations' backlogs; answers their bands. */
  countIn(organizationIds: readonly number[]): Promise<number[]> {
    return this.backlogs.countIn(organizationIds);
  }

  /** Takes a job counted in at `band` out of its organization's backlog again: it was not enqueued after all. */
  countOut(organizationId: number, band: number): Promise<void> {
    return this.backlogs.countOut(organizationId, band);
  }

  /**
   * Drops the dial job of a run that will not be dialed (canceled while
   * queued): it would only wake, reserve a pacing instant and find its run
   * gone. A job a dialer holds right now is left (it finds the run canceled
   * at its claim). Answers whether the job was dropped.
   */
  async discardPlaceCall(runId: number): Promise<boolean> {
    const job = await this.queue.getJob(placeCallJobId(runId));
    if (!job || (await this.queue.remove(placeCallJobId(runId))) !== 1) return false;
    if (isInBacklog(job)) await this.countOut(job.data.organizationId, job.priority);
    return true;
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

/**
 * Whether the job is still counted in its organization's backlog: enqueued
 * counted, and not yet taken up (a job sent back to wait drops the mark; one
 * retried after an error has an attempt made).
 */
export function isInBacklog(job: Pick<Job<PlaceCallJob>, 'data' | 'priority' | 'attemptsMade'>): boolean {
  return job.data.inBacklog === true && job.attemptsMade === 0 && job.priority > 0;
}
