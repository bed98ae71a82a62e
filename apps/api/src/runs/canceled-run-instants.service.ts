import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { withTimeout } from '@app/common';
import { CallsQueue, PacingInstants } from '@app/queue';

/** How long after a configuration's last cancel its queued runs are looked at: a campaign is canceled run by run. */
export const CANCELS_SETTLE_MS = 1_000;
/** Looks at a configuration after a failure (Postgres or Redis away) this many times in all. */
const ATTEMPTS = 3;
/** What a gateway shutting down waits for those looks at most (Redis away, its commands would wait for it). */
const SHUTDOWN_LOOK_MS = 2_000;

/**
 * Gives a configuration's pacing instants back once canceling has left it
 * with no queued run. Each dial job reserves its instant when first
 * admitted, one `1 / calls_per_second` after another, and a canceled run's
 * job does not dial, but its instant stays reserved: canceling the queued
 * runs of a campaign of 10,000 calls at 1 call a second would make the
 * configuration's next call wait for hours. The canceled run's job is
 * dropped too, so one that had not reserved its instant yet does not do it
 * after the give-back.
 *
 * Only a configuration none of whose runs is queued is given back: a queued
 * run's job may be waiting for its instant, and dropping the reservations
 * behind it would let later dials take the same instants. Best effort: a
 * failure is looked at again twice, and a gateway shutting down looks at
 * what it has pending first; otherwise the instants stay reserved, as
 * before any cancel.
 */
@Injectable()
export class CanceledRunInstants implements BeforeApplicationShutdown {
  private readonly logger = new Logger(CanceledRunInstants.name);
  private readonly pending = new Map<number, NodeJS.Timeout>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly instants: PacingInstants,
    private readonly callsQueue: CallsQueue,
  ) {}

  /** A queued run of the configuration was canceled: drop its job, and look at the configuration once the cancels settle. */
  queuedRunCanceled(runId: number, configurationId: number): void {
    this.callsQueue.discardPlaceCall(runId).catch((error: unknown) => {
      // Harmless: the job finds its run canceled and does nothing.
      this.logger.warn({ run_id: runId, err: error }, 'dial job of a canceled run not dropped');
    });
    this.lookLater(configurationId, 1);
  }

  async beforeApplicationShutdown(): Promise<void> {
    const configurations = [...this.pending.keys()];
    for (const timer of this.pending.values()) clearTimeout(timer);
    this.pending.clear();
    const looks = Promise.all(configurations.map((configurationId) => this.giveBackIfNoneQueued(configurationId, ATTEMPTS)));
    await withTimeout(looks, SHUTDOWN_LOOK_MS, 'giving back pacing instants before shutdown').catch((error: unknown) => {
      this.logger.warn({ telephony_configuration_ids: configurations, err: error }, 'pacing instants of canceled runs not given back');
    });
  }

  private lookLater(configurationId: number, attempt: number): void {
    clearTimeout(this.pending.get(configurationId));
    const timer = setTimeout(() => {
      this.pending.delete(configurationId);
      void this.giveBackIfNoneQueued(configurationId, attempt);
    }, CANCELS_SETTLE_MS);
    timer.unref();
    this.pending.set(configurationId, timer);
  }

  private async giveBackIfNoneQueued(configurationId: number, attempt: number): Promise<void> {
    try {
      const [{ queued }]: Array<{ queued: boolean }> = await this.dataSource.query(
        `SELECT EXISTS (SELECT 1 FROM workflow_runs WHERE telephony_configuration_id = $1 AND status = 'queued' AND NOT is_completed) AS queued`,
        [configurationId],
      );
      if (queued) return;
      if (await this.instants.forgetReserved(configurationId)) {
        this.logger.log({ telephony_configuration_id: configurationId }, 'pacing instants of canceled runs given back');
      }
    } catch (error) {
      const again = attempt < ATTEMPTS && !this.pending.has(configurationId);
      this.logger.warn(
        { telephony_configuration_id: configurationId, attempt, err: error },
        again ? 'pacing instants of canceled runs not given back yet; looking again' : 'pacing instants of canceled runs not given back',
      );
      if (again) this.lookLater(configurationId, attempt + 1);
    }
  }
}
