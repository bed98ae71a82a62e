import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { doublingDelay, RecentMap } from '@app/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { RunStatus, TelephonyConfiguration, WorkflowRun, WorkflowRunStore } from '@app/persistence';
import { CallsQueue, ConcurrencyLimiter, placeCallJobId, QueueName, RedisClient } from '@app/queue';
import { callReferenceOf, CredentialsCipher, DialAttempt, isCarrierNetworkFailure, TelephonyProviders } from '@app/telephony';
import { CallEventApplier } from '../call-events/call-event-applier.service';
import { ANSWERED_CALL_GRACE_SECONDS } from '../calls/call-limits';
import { RecordingFetchesBusy, RunArtifactsCollector } from '../call-events/run-artifacts-collector.service';
import { PeriodicTask } from './periodic-task';
import { RunDispatcher } from './run-dispatcher.service';

const BATCH = 200;
/** How long past DIAL_TIMEOUT_SECONDS a dialing run is left to a dial job a dialer runs, or coming back for its unsettled claim. */
const UNSETTLED_CLAIM_GRACE_SECONDS = 600;
/** A completed run whose artifacts are not stored after this long gets another try. */
const ARTIFACTS_RETRY_SECONDS = 30;
/** After this long a completed run is finished without a carrier recording that cannot be fetched (an expired link, revoked credentials). */
export const ARTIFACTS_GIVE_UP_SECONDS = 3600;
/** A run whose reaping failed waits this long before the next try, doubling with each failure up to the cap. */
const RETRY_FIRST_MS = 30_000;
const RETRY_CAP_MS = 30 * 60_000;
/** Runs remembered with a failed reaping (the oldest forgotten first: it is then simply tried again). */
const FAILURES_LIMIT = 10_000;
/**
 * A run left open after a look is looked at again after this long, doubling
 * with each look up to the cap, rather than every round: a run ringing from
 * 60 to 180 s was otherwise asked of its carrier 24 times, each time its
 * carrier's requests (up to tens for a search by numbers) and three database
 * round trips. A run reaching its limit is looked at then, whatever the wait.
 */
const LOOK_AGAIN_FIRST_MS = 10_000;
const LOOK_AGAIN_CAP_MS = 60_000;
/** Runs remembered with their next look (the oldest forgotten first: it is then simply looked at in the next round). */
const LOOKED_AT_LIMIT = 20_000;
/**
 * After a look-up finds a configuration's carrier unreachable (no answer, a
 * timeout), its runs are not asked of it for this long: each would wait its
 * own timeout, and a round of them kept every other organization's runs past
 * their limits waiting behind them. A run reaching its limit meanwhile is
 * left for its own look-up once the carrier may be asked again, for up to
 * CARRIER_AWAY_GRACE_SECONDS past its limit (a ringing run whose answer was
 * lost would otherwise be ended, and its live call hung up, unasked); past
 * that it ends as after a failed look-up.
 */
const CARRIER_AWAY_MS = 30_000;
const CARRIER_AWAY_GRACE_SECONDS = 60;

type ReconcileOutcome = 'moved' | 'job_running' | 'unmoved' | 'carrier_away';

/** When a run left open is next looked at (`performance.now()` ms). */
interface NextLook {
  /** The `status_changed_at` it was left at: a run that moved since is another dial, looked at afresh. */
  since: number;
  looks: number;
  /** Not looked at before then: the next wait's end, or its limit if that comes first. */
  atMs: number;
}

interface StaleRun {
  id: number;
  status: RunStatus;
  age_seconds: number;
  /** The instant its age is measured from: a run whose status changed since (requeued and claimed again) is another dial. */
  status_changed_at: Date;
  /** The limit its dial gave the carrier, or (dialed before runs kept it) its configuration's. */
  max_call_duration_seconds: number | null;
}

/**
 * Ends runs that stopped moving. A run whose carrier events stopped is first
 * looked up at its carrier (status events may be lost); what the carrier
 * reports is applied like any event. A run that is still stuck past its
 * limit ends `failed` with an `end_reason` saying why, and its concurrency
 * slot is freed. A dial that never reached the carrier is queued again.
 */
@Injectable()
export class RunReaper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(RunReaper.name);
  private readonly task: PeriodicTask;
  /**
   * Runs whose last reaping failed, and when to try them again: without the
   * wait, runs that fail every time (a carrier that cannot be asked) would be
   * the oldest rows of every round and crowd out the rest of the batch.
   */
  private readonly failures = new RecentMap<number, { count: number; retryAt: number }>(FAILURES_LIMIT);
  /**
   * The slots (run id → configuration id) of runs this reaper ended whose
   * release failed (a Redis blip). A final run is never selected again, so
   * each round releases them once more, as the retry of a final event's job
   * does; forgotten ones (another dialer took the reaper over) are freed when
   * their lease runs out.
   */
  private readonly unreleased = new RecentMap<number, number>(FAILURES_LIMIT);
  /** Runs left open after a look, and when to look at them again. */
  private readonly nextLooks = new RecentMap<number, NextLook>(LOOKED_AT_LIMIT);
  /** Configurations whose carrier a look-up found unreachable, and until when their runs are not asked of it. */
  private readonly carriersAway = new RecentMap<number, number>(FAILURES_LIMIT);

  constructor(
    private readonly dataSource: DataSource,
    private readonly runs: WorkflowRunStore,
    private readonly providers: TelephonyProviders,
    private readonly cipher: CredentialsCipher,
    private readonly events: CallEventApplier,
    private readonly artifacts: RunArtifactsCollector,
    private readonly slots: ConcurrencyLimiter,
    private readonly dispatcher: RunDispatcher,
    private readonly client: RedisClient,
    private readonly callsQueue: CallsQueue,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.task = new PeriodicTask('run-reaper', config.reaperIntervalMs, client, (stopping) => this.round(stopping));
  }

  onApplicationBootstrap(): void {
    this.task.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.task.stop();
  }

  /** One round; `stopping` (the dialer shutting down) ends it after the run in hand: the rest are the next round's. */
  async round(stopping?: AbortSignal): Promise<void> {
    for (const [runId, configurationId] of [...this.unreleased]) {
      if (stopping?.aborted) return;
      await this.releaseSlot(configurationId, runId);
    }
    const stale: StaleRun[] = await this.dataSource.query(
      `SELECT r.id, r.status, EXTRACT(EPOCH FROM now() - r.status_changed_at)::float AS age_seconds, r.status_changed_at,
              COALESCE(r.max_call_duration_seconds, c.max_call_duration_seconds) AS max_call_duration_seconds
         FROM workflow_runs r
         LEFT JOIN telephony_configurations c ON c.id = r.telephony_configuration_id
        WHERE NOT r.is_completed AND r.id <> ALL($5::bigint[]) AND (
              (r.status IN ('dialing', 'ringing') AND r.status_changed_at < now() - make_interval(secs => $1))
           OR (r.status = 'in_progress'
               AND r.status_changed_at < now() - make_interval(secs => COALESCE(r.max_call_duration_seconds, c.max_call_duration_seconds, 3600) + $2))
           OR (r.status = 'completed' AND r.status_changed_at < now() - make_interval(secs => $3)))
        ORDER BY r.status_changed_at LIMIT $4`,
      [this.config.reconcileAfterSeconds, ANSWERED_CALL_GRACE_SECONDS, ARTIFACTS_RETRY_SECONDS, BATCH, this.waiting()],
    );
    for (const candidate of stale) {
      if (stopping?.aborted) return;
      try {
        await this.reap(candidate);
        this.failures.delete(candidate.id);
      } catch (error) {
        const count = (this.failures.get(candidate.id)?.count ?? 0) + 1;
        const waitMs = doublingDelay(RETRY_FIRST_MS, count, RETRY_CAP_MS);
        this.failures.set(candidate.id, { count, retryAt: performance.now() + waitMs });
        this.logger.warn({ err: error, run_id: candidate.id, failures: count, retry_in_ms: waitMs }, 'could not reap run');
      }
    }
  }

  /** The runs still waiting after a failed reaping, or for their next look. Monotonic: a wall clock stepped back does not extend a wait. */
  private waiting(): number[] {
    const now = performance.now();
    const failed = [...this.failures].filter(([, failure]) => failure.retryAt > now).map(([runId]) => runId);
    const left = [...this.nextLooks].filter(([, next]) => next.atMs > now).map(([runId]) => runId);
    return [...failed, ...left];
  }

  /** Notes a run left open after a look: the next is due after a wait doubling with each look, or at its limit. */
  private lookAgainLater(candidate: StaleRun, limitSeconds: number): void {
    const since = candidate.status_changed_at.getTime();
    const previous = this.nextLooks.get(candidate.id);
    const looks = previous?.since === since ? previous.looks + 1 : 1;
    const pastLimit = candidate.age_seconds >= limitSeconds;
    const now = performance.now();
    const waitMs = doublingDelay(LOOK_AGAIN_FIRST_MS, looks, LOOK_AGAIN_CAP_MS);
    const limitInMs = pastLimit ? waitMs : (limitSeconds - candidate.age_seconds) * 1000;
    this.nextLooks.set(candidate.id, { since, looks, atMs: now + Math.min(waitMs, limitInMs) });
  }

  private async reap(candidate: StaleRun): Promise<void> {
    if (candidate.status === 'completed') {
      await this.artifacts.collect(candidate.id, true, candidate.age_seconds >= ARTIFACTS_GIVE_UP_SECONDS);
      return;
    }
    const run = await this.runs.findById(candidate.id);
    // Only the run as selected: one that moved since (another reaper's round requeued it and a dialer claimed it
    // again) is a new dial whose age is not the one measured.
    if (!run || run.status !== candidate.status || run.statusChangedAt?.getTime() !== candidate.status_changed_at.getTime()) return;
    const limit = this.hardLimitSeconds(candidate);
    // A run whose dial job comes back for its unsettled claim sent no call under that claim: nothing for its carrier
    // to find, and the job takes the claim up when it returns. Only so long (UNSETTLED_CLAIM_GRACE_SECONDS).
    const mayWaitForItsJob = candidate.status === 'dialing' && !run.providerCallId && candidate.age_seconds < limit + UNSETTLED_CLAIM_GRACE_SECONDS;
    if (mayWaitForItsJob && (await this.claimComesBack(run.id))) {
      this.lookAgainLater(candidate, limit);
      return;
    }
    const config = run.telephonyConfigurationId
      ? await this.dataSource.getRepository(TelephonyConfiguration).findOneBy({ id: run.telephonyConfigurationId })
      : null;
    const reconciled = await this.reconcile(run, config);
    if (reconciled === 'moved') {
      this.nextLooks.delete(run.id);
      return;
    }
    if (candidate.age_seconds < limit || (reconciled === 'carrier_away' && candidate.age_seconds < limit + CARRIER_AWAY_GRACE_SECONDS)) {
      this.lookAgainLater(candidate, limit);
      return;
    }
    // The look-up may have taught the run its call id.
    const providerCallId = run.providerCallId ?? (await this.runs.findById(run.id))?.providerCallId ?? null;
    // A run the carrier has no call for, whose dial job a dialer is running (its dial under way, or about to find the
    // run claimed and leave it, after which the next round queues it again), is not ended for a dial that never went
    // out. Only so long. Looked at again next round: a dial request under way is answered within seconds.
    if (mayWaitForItsJob && !providerCallId && reconciled === 'job_running') return;
    const endReason =
      candidate.status === 'dialing'
        ? providerCallId
          ? 'no_carrier_response'
          : 'dial_outcome_unknown'
        : candidate.status === 'ringing'
          ? 'ring_timeout'
          : 'max_duration_exceeded';
    // Only the run as it was selected, stuck: an event that moved it meanwhile (an answer) wins, and so does a dial of
    // a run handed back to the queue and claimed again since (its age is no longer the one measured). One read without
    // a call id is ended only while it still has none: an id stored since (a dial that answered late) is a call to
    // hang up, which the next round finds and ends with the run.
    const ended = await this.runs.transition(
      run.id,
      'failed',
      'reaper.failed',
      { endReason, endedAt: new Date() },
      { stuck_in: candidate.status, seconds: Math.round(candidate.age_seconds) },
      [candidate.status],
      { unmovedSince: candidate.status_changed_at, ...(providerCallId ? {} : { withoutCallId: true }) },
    );
    this.nextLooks.delete(run.id);
    if (!ended) return;
    // A call the carrier still holds must not ring once its run has ended (one queued behind the carrier's own rate
    // limit, or ringing), nor talk on past its limit (a carrier that did not apply the maximum duration the dial gave
    // it, or whose end of the call never reached us while the look-up failed). Hung up before its slot is freed: the
    // slot stays taken while the call may still talk, and a Redis that is away (the release then waits for it) does not
    // hold the hang-up back.
    if (config && providerCallId) await this.hangUp(run, config, providerCallId);
    if (ended.telephonyConfigurationId) await this.releaseSlot(ended.telephonyConfigurationId, run.id);
  }

  /** Frees the slot of a run the reaper ended; one that cannot be freed now is tried again next round. */
  private async releaseSlot(configurationId: number, runId: number): Promise<void> {
    try {
      await this.slots.release(configurationId, runId);
      this.unreleased.delete(runId);
    } catch (error) {
      this.unreleased.set(runId, configurationId);
      this.logger.warn({ err: error, run_id: runId }, 'could not free the slot of a run the reaper ended: trying again next round');
    }
  }

  /**
   * Best effort: the run ends at its limit whatever the carrier answers. The
   * run is already ended, so the call is ended whatever its state
   * (`endCall`), answered included: a ringing run's call answered while the
   * look-up failed, or an answered one past its maximum duration, would
   * otherwise talk on unrecorded, outside its configuration's concurrency.
   */
  private async hangUp(run: WorkflowRun, config: TelephonyConfiguration, providerCallId: string): Promise<void> {
    if (!this.providers.has(config.provider)) return;
    try {
      const hungUp = await this.providers.get(config.provider).endCall({ ...callReferenceOf(run, config, this.cipher), providerCallId });
      if (hungUp) await this.runs.appendEvent(run.id, 'reaper.hung_up', { provider_call_id: providerCallId });
    } catch (error) {
      this.logger.warn({ err: error, run_id: run.id }, 'could not hang up the call of a run past its limit');
    }
  }

  /**
   * Asks the carrier: `moved` when what it said moved the run (or queued it
   * again); `job_running` when it has no call for a `dialing` run whose dial
   * job a dialer holds; `carrier_away` when it was not asked (a look-up found
   * it unreachable a moment ago); else `unmoved`.
   */
  private async reconcile(run: WorkflowRun, config: TelephonyConfiguration | null): Promise<ReconcileOutcome> {
    if (!config || !this.providers.has(config.provider)) return 'unmoved';
    if (performance.now() < (this.carriersAway.get(config.id) ?? 0)) return 'carrier_away';
    const provider = this.providers.get(config.provider);
    // A carrier that cannot be asked (an outage, revoked credentials) must not keep the run open past its limit.
    const lookup = await Promise.resolve()
      .then(() => provider.lookupCall({ ...callReferenceOf(run, config, this.cipher), dial: dialOf(run) }))
      .catch((error: unknown) => {
        this.logger.warn({ err: error, run_id: run.id }, 'could not look the call up at the carrier');
        if (isCarrierNetworkFailure(error)) {
          this.carriersAway.set(config.id, performance.now() + CARRIER_AWAY_MS);
          this.logger.warn(
            { telephony_configuration_id: config.id, for_ms: CARRIER_AWAY_MS },
            "the configuration's carrier did not answer: its runs are not looked up for a while",
          );
        }
        return { kind: 'unknown' as const };
      });
    if (lookup.kind === 'not_found' && run.status === 'dialing' && !run.providerCallId) {
      // A live dialer still holds the job's lock while its dial request is under way: leave it be.
      if (await this.dialJobIsLocked(run.id)) return 'job_running';
      // The carrier never got the request (the dialer stopped in between): dialing again cannot duplicate. Only the
      // dial the look-up was about, though: a run requeued and claimed again since it was read (by another reaper
      // whose round overlapped this one) is a new dial the look-up knows nothing of.
      const lease = await this.slots.lease(config.id, run.id);
      const requeued = await this.runs.transition(
        run.id,
        'queued',
        'reaper.requeued',
        {},
        { reason: 'carrier_has_no_call' },
        ['dialing'],
        { unmovedSince: run.statusChangedAt, withoutCallId: true },
      );
      if (requeued) {
        // The dead dial's lease only: the run's job may have come back as soon as the run was queued, and renewed the
        // slot for its new dial already.
        if (lease !== null) await this.slots.releaseLease(config.id, run.id, lease);
        // The dead dialer's job may have ended (stalled too often): replace it rather than add beside it.
        await this.dispatcher.ensureJobs([{ id: run.id, organization_id: run.organizationId }]);
      }
      return requeued !== null ? 'moved' : 'unmoved';
    }
    if (lookup.kind !== 'found') return 'unmoved';
    if (!run.providerCallId) {
      // A call found by the dial's numbers may be another run's (see `anotherOpenRunMayOwn`): not this run's to follow.
      if (provider.findsCallsByNumbers && run.fromNumber && (await this.runs.anotherOpenRunMayOwn(run, config.provider, run.fromNumber, lookup.providerCallId))) {
        return 'unmoved';
      }
      await this.runs.recordProviderCallId(run.id, lookup.providerCallId);
    }
    let moved = false;
    for (const event of lookup.events) {
      try {
        moved = (await this.events.apply(event)) || moved;
      } catch (error) {
        // The call's end is applied; its artifacts wait for a fetch turn, which the reaper's own collection of
        // completed runs waits for (`collect` forced), in this round or the next. The events after it still apply.
        if (!(error instanceof RecordingFetchesBusy)) throw error;
        moved = true;
      }
    }
    return moved ? 'moved' : 'unmoved';
  }

  /**
   * Whether the run's dial job is still to come back for a claim whose
   * answer it lost (`unsettledClaim`): no call went out under that claim, and
   * the job takes it up (`resumeClaim`) when it returns, after Postgres is
   * back (its retries of a failed read back off up to 30 s). Ending the run
   * here would end a call never placed as `dial_outcome_unknown`. Waited for
   * at most UNSETTLED_CLAIM_GRACE_SECONDS past the dial timeout: a job sent
   * back to wait (`moveToDelayed`) spends no attempt, so one whose writes
   * keep failing could otherwise hold the run `dialing` for ever. A job that
   * cannot be read throws, and the run is looked at again after a backoff.
   */
  private async claimComesBack(runId: number): Promise<boolean> {
    const pending = await this.callsQueue.pendingPlaceCall(runId);
    if (typeof pending?.unsettledClaim !== 'string') return false;
    this.logger.log({ run_id: runId }, 'left a dialing run to its dial job, which comes back for its unsettled claim');
    return true;
  }

  private async dialJobIsLocked(runId: number): Promise<boolean> {
    return (await this.client.redis.exists(this.client.keyFor(QueueName.Calls, placeCallJobId(runId), 'lock'))) === 1;
  }

  private hardLimitSeconds(run: StaleRun): number {
    if (run.status === 'dialing') return this.config.dialTimeoutSeconds;
    if (run.status === 'ringing') return this.config.ringTimeoutSeconds;
    return (run.max_call_duration_seconds ?? 3600) + ANSWERED_CALL_GRACE_SECONDS;
  }
}

/**
 * The dial a `dialing` run without a call id made, for carriers that can only
 * find its call by numbers and time. The claim (`queued → dialing`) stamped
 * `status_changed_at` just before the request went out, and nothing else
 * moves a `dialing` run's status, so that is when the dial was attempted.
 */
function dialOf(run: WorkflowRun): DialAttempt | undefined {
  if (run.status !== 'dialing' || run.providerCallId || !run.fromNumber) return undefined;
  return { to: run.phoneNumber, from: run.fromNumber, attemptedAt: run.statusChangedAt };
}
