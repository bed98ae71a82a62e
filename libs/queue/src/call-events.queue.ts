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
}
