import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import { Queue } from 'bullmq';
import { DialBacklogs } from './dial-backlogs';
import { JobPolicy } from './job-policies';
import { JobName, PlaceCallJob, placeCallJobId } from './jobs';
import { QueueName } from './queue-names';
import { RedisClient } from './redis-client';

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
    private readonly client: RedisClient,
  ) {}

  /**
   * `bands`: each job's band, counted in already (`countIn`, with the jobs'
   * organizations in the same order); without them the jobs are counted in
   * here. A job whose run already has one is not added again, but it is
   * counted in: the count errs towards a longer backlog (a later band) until
   * that band's count is forgotten (`BACKLOG_COUNT_TTL_MS`), never towards
   * taking a campaign for a single call.
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

  /** Of these runs, those that have no dial job (in any state). */
  async runsWithoutJobs(runIds: readonly number[]): Promise<number[]> {
    if (runIds.length === 0) return [];
    const pipeline = this.client.redis.pipeline();
    for (const runId of runIds) pipeline.exists(`${this.queue.qualifiedName}:${placeCallJobId(runId)}`);
    const answers = (await pipeline.exec()) ?? [];
    return runIds.filter((_runId, index) => {
      const [error, exists] = answers[index] ?? [new Error('no answer'), null];
      if (error) throw error;
      return exists === 0;
    });
  }

  /** Counts jobs about to be enqueued (one organization id each) into their organizations' backlogs; answers their bands. */
  countIn(organizationIds: readonly number[]): Promise<number[]> {
    return this.backlogs.countIn(organizationIds);
  }

  /** Takes a job counted in at `band` out of its organization's backlog again: it was not enqueued after all. */
  uncount(organizationId: number, band: number): Promise<void> {
    return this.backlogs.uncount(organizationId, band);
  }

  /**
   * The run's job was taken up by a dialer: out of its organization's
   * backlog, once only whoever asks (see `DialBacklogs.countOutJob`).
   */
  async countOut(job: Pick<PlaceCallJob, 'runId' | 'organizationId'>): Promise<void> {
    await this.backlogs.countOutJob(job.organizationId, `${this.queue.qualifiedName}:${placeCallJobId(job.runId)}`);
  }

  /**
   * Drops the dial job of a run that will not be dialed (canceled while
   * queued): it would only wake, reserve a pacing instant and find its run
   * gone. A job a dialer holds right now is left (it finds the run canceled
   * at its claim). Answers whether the job was dropped. The job is counted
   * out of its backlog first, while its hash is there to keep the mark that
   * makes that once only (a dialer may take the job up meanwhile).
   */
  async discardPlaceCall(runId: number): Promise<boolean> {
    const job = await this.queue.getJob(placeCallJobId(runId));
    if (!job) return false;
    if (job.data.inBacklog) await this.countOut(job.data);
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
