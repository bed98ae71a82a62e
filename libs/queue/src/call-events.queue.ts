import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import { JobState, Queue } from 'bullmq';
import { JobPolicy } from './job-policies';
import { CallEventJob, JobName, callEventJobId } from './jobs';
import { QueueName } from './queue-names';

/** The states of a job not yet applied: queued, due later, or being applied. */
const UNAPPLIED: ReadonlySet<JobState | 'unknown'> = new Set<JobState | 'unknown'>(['waiting', 'prioritized', 'delayed', 'active', 'waiting-children']);

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
   * the queue and not applied yet: waiting, due later, or being applied.
   */
  async holdsAnswerOf(runId: number): Promise<boolean> {
    const answer = callEventJobId({ runId, type: 'answered' });
    const states = await Promise.all([answer, `${answer}-amd`].map((jobId) => this.queue.getJobState(jobId)));
    return states.some((state) => UNAPPLIED.has(state));
  }
}
