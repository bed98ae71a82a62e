import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import { Queue } from 'bullmq';
import { JobPolicy } from './job-policies';
import { CallEventJob, JobName, callEventJobId } from './jobs';
import { QueueName } from './queue-names';

/** Producer side of the `call-events` queue: one job per (run, event type), so duplicates collapse. */
@Injectable()
export class CallEventsQueue {
  constructor(@InjectQueue(QueueName.CallEvents) private readonly queue: Queue<CallEventJob>) {}

  /** `jobId` overrides the default one-per-(run, type) id, for events that may legitimately repeat. */
  async enqueueEvent(event: CallEventJob, delayMs = 0, jobId = callEventJobId(event)): Promise<void> {
    await this.queue.add(JobName.CallEvent, event, {
      ...JobPolicy.callEvent,
      jobId,
      delay: Math.max(0, Math.round(delayMs)),
    });
  }

  /**
   * Whether a job with the run's answer (the plain answer, or the
   * answering-machine verdict, which also tells the call was answered) is in
   * the queue and not applied yet: waiting, due later, or being applied. One
   * hash read each (a job's state would scan the queue's lists).
   */
  async holdsAnswerOf(runId: number): Promise<boolean> {
    const answer = callEventJobId({ runId, type: 'answered' });
    const jobs = await Promise.all([answer, `${answer}-amd`].map((jobId) => this.queue.getJob(jobId)));
    return jobs.some((job) => job !== undefined && !job.finishedOn);
  }
}
