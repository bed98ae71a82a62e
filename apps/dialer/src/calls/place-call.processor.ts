import { Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Logger, OnModuleInit } from '@nestjs/common';
import { DelayedError, Job } from 'bullmq';
import { APP_CONFIG, AppConfig } from '@app/config';
import { CallsQueue, cappedExponentialBackoff, databaseAwayWait, delayWithData, logConnectionErrors, PlaceCallJob, QueueName, RedisHeartbeat } from '@app/queue';
import { CallPlacer } from './call-placer.service';
import { PlaceCallProgress, PlaceDecision } from './place-decision';

type PlaceCallJobData = PlaceCallJob & PlaceCallProgress;

/**
 * Consumes `place-call` jobs. Waiting (pacing, a concurrency slot, a carrier
 * asking us to back off) moves the job back to delayed without spending an
 * attempt, so the worker is free for other configurations' calls meanwhile.
 * Errors are logged with context and rethrown so BullMQ retries.
 */
@Processor(QueueName.Calls, { settings: { backoffStrategy: cappedExponentialBackoff } })
export class PlaceCallProcessor extends WorkerHost implements OnModuleInit {
  private readonly logger = new Logger(PlaceCallProcessor.name);

  constructor(
    private readonly placer: CallPlacer,
    private readonly callsQueue: CallsQueue,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly heartbeat: RedisHeartbeat,
  ) {
    super();
  }

  onModuleInit(): void {
    this.worker.concurrency = this.config.dialerConcurrency;
    logConnectionErrors(this.worker, `worker ${QueueName.Calls}`, this.logger);
    this.heartbeat.watch(this.worker);
  }

  async process(job: Job<PlaceCallJobData>, token?: string): Promise<PlaceDecision['kind'] | string> {
    if (job.data.inBacklog) {
      // Taken up: out of its organization's backlog (once only, a retry or a stalled job's second run asks again),
      // alongside the dial's own work rather than before it.
      this.callsQueue.countOut(job.data).catch((error: unknown) => {
        this.logger.warn({ run_id: job.data.runId, err: error }, "job not counted out of its organization's backlog");
      });
    }
    let decision: PlaceDecision;
    try {
      const { slotAt, carrierRetries, unsettledClaim, resumingAs, claimLapses, lateDials, rateRefusals, rejected, carrierPausedMs } = job.data;
      const progress = { slotAt, carrierRetries, unsettledClaim, resumingAs, claimLapses, lateDials, rateRefusals, rejected, carrierPausedMs };
      decision = await this.placer.place(job.data, progress);
    } catch (error) {
      const attempt = job.attemptsMade + 1;
      const fields = { err: error, run_id: job.data.runId, job_id: job.id, attempt };
      // A database that cannot be reached (a failover, an outage): waited for without spending attempts or writing a
      // line per job and pass, as call events do. Its 40 attempts would run out in 13 minutes.
      const away = databaseAwayWait(job, error);
      if (away) {
        if (away.logged) this.logger.warn({ ...fields, passes: away.passes, retry_in_ms: away.waitMs }, 'place-call waits for the database');
        await job.moveToDelayed(Date.now() + away.waitMs, token);
        throw new DelayedError('waiting for the database');
      }
      this.logger.error(fields, 'place-call failed');
      if (attempt >= (job.opts.attempts ?? 1)) {
        await this.placer.giveUp(job.data.runId, (error as Error).message).catch(() => undefined);
      }
      throw error;
    }
    if (decision.kind === 'done') return decision.outcome;
    // A job sent back to wait reads its run first when it returns: a run canceled meanwhile is then skipped at once,
    // instead of asking for a pacing instant and a slot it will not use, again and again while the carrier is busy.
    // It drops its `inBacklog` mark too: it was counted out of its backlog on this pass. Data and delay are one step
    // that checks the job's lock, so a dialer that lost the job to another writes nothing over that one's data.
    await delayWithData(job, { runId: job.data.runId, organizationId: job.data.organizationId, ...decision.progress }, decision.untilMs, token);
    throw new DelayedError(`waiting for ${decision.reason}`);
  }
}
