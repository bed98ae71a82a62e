import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { answeredWithError, doublingDelay } from '@app/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import {
  ClaimedRun,
  isFinalRunStatus,
  LIVE_STATUSES,
  RunReader,
  RunStatus,
  TelephonyConfiguration,
  TransitionGuard,
  TransitionOutcome,
  WorkflowRun,
  WorkflowRunStore,
} from '@app/persistence';
import { ConcurrencyLimiter, PlaceCallJob, PlaceCallRoute } from '@app/queue';
import {
  AgentSessionTokens,
  agentStreamFor,
  CallLookup,
  callbackUrlsFor,
  CarrierError,
  CredentialsCipher,
  DialAttempt,
  isCarrierNetworkFailure,
  PlaceCallResult,
  TelephonyProvider,
  TelephonyProviders,
} from '@app/telephony';
import { PromptRenderer, renderDefinition } from '@app/templating';
import { ConfigurationLookup } from '../lookups/configuration-lookup.service';
import { GroupedRunWrites } from '../runs/grouped-run-writes.service';
import { Admission, AdmissionLimits, DialAdmission, INLINE_PACING_WAIT_MS, rateWindow } from '../pacing/dial-admission';
import { RunDispatcher } from '../recovery/run-dispatcher.service';
import { DefinitionPicker } from './definition-picker.service';
import { ANSWERED_CALL_GRACE_SECONDS } from './call-limits';
import { carrierRetryDelayMs } from './carrier-backoff';
import { CarrierPause, PauseAnswer } from './carrier-pause';
import { PlaceCallProgress, PlaceDecision } from './place-decision';

/**
 * A reserved pacing instant missed by more than this is given up and a new one
 * reserved. Going without pacing however late would leave every job that came
 * back late behind a campaign's backlog polling the rolling window (each
 * refusal a delay of at most a second) for as long as the campaign lasts;
 * README, "What is not guaranteed", has what this costs instead.
 */
const STALE_SLOT_MS = 1000;
const MAX_CARRIER_RETRIES = 25;
/**
 * A dial sent back to wait for its configuration's carrier (`CarrierPause`):
 * no attempt spent, no pacing instant held (the instant is missed by the
 * time it returns: a new one is reserved then), no slot taken (one taken on
 * an earlier attempt stays until the run ends).
 */
function carrierWait(progress: PlaceCallProgress, pause: Pick<PauseAnswer, 'waitMs'>): PlaceDecision {
  const waitMs = pause.waitMs + jitter(0, 1000);
  const carrierPausedMs = (progress.carrierPausedMs ?? 0) + waitMs;
  const progressed = { ...progress, slotAt: undefined, rateRefusals: undefined, carrierPausedMs };
  return { kind: 'delay', untilMs: Date.now() + waitMs, progress: progressed, reason: 'carrier_unresponsive' };
}

/**
 * Ids of attempts to take an unsettled claim up whose answers were lost, kept
 * at most: the newest. One older that did commit is then not known for the
 * job's own; the job leaves the run `dialing`, never dialed by it, and the
 * reaper asks the carrier (no call: queued again) as for any lost claim.
 */
const RESUMING_IDS_KEPT = 16;

/** The longest a job waits for its configuration's carrier to answer dials again (`CarrierPause`), in all; then its run ends. */
const MAX_CARRIER_PAUSED_MS = 10 * 60_000;
/** A dial request that failed without an answer after this long held its worker: it counts toward a pause. */
const SLOW_NETWORK_FAILURE_MS = 2_000;
/** How soon a job whose claim is unsettled (the database away) comes back for it. */
const UNSETTLED_RETRY_MS = 2_000;
/** The longest a job whose claims keep lapsing waits before claiming again (`PlaceCallProgress.claimLapses`). */
const MAX_LAPSED_CLAIM_WAIT_MS = 60_000;
/**
 * How long after its admission (its pacing instant) a dial goes out on it.
 * Later, the database may have held it back (a lock, a checkpoint, a
 * failover) while dials went on being admitted at the configuration's pace,
 * all of which would reach the carrier together once it answered: it is
 * admitted again (`handBackLateDial`).
 */
export const DIAL_LATE_MS = 1_000;
/** A job's dials handed back as late at most this many times; then it goes out however late (the database is slow). */
export const MAX_LATE_DIALS = 3;
/**
 * A dial refused room in the rate window this many times in a row on its
 * pacing instant gives the instant up and is paced again. Waiting for room
 * on it however long would leave every dial of a campaign whose
 * `calls_per_second` was lowered under its reserved instants (or more late
 * dials than the window lets out) asking the window again each time it has
 * room, all of them at once, for as long as the campaign lasts.
 */
export const RATE_REFUSALS_BEFORE_PACING_AGAIN = 2;
/** The log entry of a claim taken up again (`resumeClaim`). */
const CLAIM_RESUMED = 'dialer.claim_resumed';

/**
 * A run this job claimed, the claim's id and when it was sent
 * (`performance.now()`), when the dial was admitted and the slot's lease it
 * took, and the job's progress so far.
 */
interface ClaimedDial {
  run: ClaimedRun;
  claimId: string;
  claimedAt: number;
  admittedAt: number;
  lease: string;
  progress: PlaceCallProgress;
}

/**
 * Turns a queued run into one carrier call. It waits for the configuration's
 * pacing instant and a concurrency slot (by delaying the job, never failing
 * it), claims the run with a conditional `queued → dialing` update, and only
 * the winner asks the carrier. A duplicated or retried job finds the run
 * claimed and does nothing.
 */
@Injectable()
export class CallPlacer {
  private readonly logger = new Logger(CallPlacer.name);

  constructor(
    private readonly runs: WorkflowRunStore,
    private readonly reader: RunReader,
    private readonly writes: GroupedRunWrites,
    private readonly configurations: ConfigurationLookup,
    private readonly definitions: DefinitionPicker,
    private readonly renderer: PromptRenderer,
    private readonly providers: TelephonyProviders,
    private readonly cipher: CredentialsCipher,
    private readonly slots: ConcurrencyLimiter,
    private readonly admission: DialAdmission,
    private readonly sessions: AgentSessionTokens,
    private readonly dispatcher: RunDispatcher,
    private readonly carrierPause: CarrierPause,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async place(job: PlaceCallJob, progress: PlaceCallProgress = {}): Promise<PlaceDecision> {
    const { runId, organizationId } = job;
    let route = job.route;
    if (!route) {
      const stored = await this.reader.findById(runId);
      // A run left `dialing` under this job's unsettled claim is still this job's to dial (`resumeClaim` checks it).
      const resumable = progress.unsettledClaim !== undefined && stored?.status === 'dialing';
      if (!stored || (stored.status !== 'queued' && !resumable)) {
        // An earlier attempt may have taken the run's slot and stopped before its claim; a run that has ended has no
        // call to hold it (one canceled while queued is freed by the cancel too, but that is best effort).
        if (stored?.telephonyConfigurationId && isFinalRunStatus(stored.status)) await this.slots.release(stored.telephonyConfigurationId, runId);
        return done('skipped');
      }
      route = routeOf(stored);
    }
    if (progress.rejected && progress.unsettledClaim !== undefined) {
      // A write that fails fails the job, whose retries come back to it.
      if (await this.endRejected(runId, progress.rejected, heldClaims(progress))) {
        if (route.telephonyConfigurationId !== null) await this.slots.release(route.telephonyConfigurationId, runId);
        return done('failed');
      }
      // The run is no longer `dialing` under this job's claim (handed back to the queue, or claimed since): an
      // attempt as any other, its rejection the claim's alone.
      progress = { ...progress, rejected: undefined, unsettledClaim: undefined, resumingAs: undefined };
    }

    // Nothing below the claim's answer is known to be current: a failure found before it only moves a run still
    // `queued`, so a job of a run that already went on (a duplicate, a retry) leaves it alone.
    const config = await this.configurations.find(route.telephonyConfigurationId, organizationId);
    // An earlier attempt may have taken the run's slot before it stopped: ending the run frees it.
    if (!config || !this.providers.has(config.provider)) {
      const configurationId = route.telephonyConfigurationId;
      return this.failUndialed(runId, progress, 'telephony_configuration_missing', 'The telephony configuration no longer exists', configurationId);
    }
    const fromNumber = config.fromNumbers.length ? config.fromNumbers[runId % config.fromNumbers.length] : null;
    if (!fromNumber) return this.failUndialed(runId, progress, 'no_from_number', 'The telephony configuration has no from number', config.id);
    // Before the claim: credentials that cannot be read (SECRETS_KEY not the one they were sealed with) fail the job
    // while its run is still queued, so its retries can dial once they can be read. After the claim, a retry would
    // find the run claimed and leave it `dialing` with no call until the reaper ended it.
    const credentials = this.cipher.credentialsOf(config);
    // A carrier that stopped answering this configuration's dials: the job waits (no attempt spent, no slot or pacing
    // instant held) rather than hold a worker that another organization's call is waiting for. So long in all, at most:
    // then the run ends, never dialed (dialed all at once, a campaign's backlog would hold every worker again).
    const pause = this.carrierPause.ask(config.id, runId);
    if (pause.waitMs > 0 && (progress.carrierPausedMs ?? 0) >= MAX_CARRIER_PAUSED_MS) {
      const message = `The carrier answered none of this configuration's dials for ${MAX_CARRIER_PAUSED_MS / 60_000} minutes; the call was not placed`;
      return this.failUndialed(runId, progress, 'carrier_unresponsive', message, config.id);
    }
    if (pause.waitMs > 0) return carrierWait(progress, pause);

    // The definition is read while the dial is admitted (it does not depend on it): one round trip less before the
    // claim. A dial sent back to wait drops it; its error, if any, is met where it is awaited.
    const picking = this.definitions.pick(route);
    picking.catch(() => undefined);
    const now = Date.now();
    // A claim left unsettled had its pacing instant: taken up, it passes the rate window and its slot, and is not sent
    // behind the configuration's backlog while its run waits `dialing`, where the reaper would end it. Nor is a retry
    // whose earlier attempt took a slot and failed before its claim: `DialAdmission` does not pace a slot's holder.
    const pace = progress.unsettledClaim === undefined && (progress.slotAt === undefined || now - progress.slotAt > STALE_SLOT_MS);
    const admission = await this.admit(config, runId, pace);
    if (admission.kind === 'paced') {
      const slotAt = now + admission.waitMs;
      return { kind: 'delay', untilMs: slotAt, progress: { ...progress, slotAt, rateRefusals: undefined }, reason: 'pacing' };
    }
    if (admission.kind === 'rate') {
      const untilMs = Date.now() + admission.waitMs;
      const rateRefusals = (progress.rateRefusals ?? 0) + 1;
      if (rateRefusals >= RATE_REFUSALS_BEFORE_PACING_AGAIN) {
        // Still no room once the window had some: more dials hold instants than the rate lets out (`calls_per_second`
        // lowered under a campaign's reserved instants, or more late ones than a window holds). Its instant is given
        // up and a new one reserved, at the configuration's pace as it is now, when it comes back.
        return { kind: 'delay', untilMs, progress: { ...progress, slotAt: undefined, rateRefusals: undefined }, reason: 'pacing' };
      }
      // The window is full (reserved instants came back late together): go out when it has room, on that instant.
      return { kind: 'delay', untilMs, progress: { ...progress, slotAt: untilMs, rateRefusals }, reason: 'pacing' };
    }
    if (admission.kind === 'concurrency') {
      // Every slot is taken: look again shortly, and reserve a fresh pacing instant then.
      const progressed = { ...progress, slotAt: undefined, rateRefusals: undefined };
      return { kind: 'delay', untilMs: now + jitter(250, 1000), progress: progressed, reason: 'concurrency' };
    }
    const admitted = { admittedAt: admission.dueAt, lease: admission.lease };
    if (pause.probe && !this.carrierPause.takeProbe(config.id, runId)) {
      // Another dial took the probe's turn since this one asked (or the dials were paused again): it waits as the others
      // do, its slot given back as the admission left it (one whose run is live, renewed by it, stays).
      await this.giveSlotBack(config.id, runId, admitted.lease);
      const again = this.carrierPause.ask(config.id, runId);
      return carrierWait(progress, { waitMs: again.waitMs > 0 ? again.waitMs : 1000 });
    }

    const definition = await picking;
    // The claim answers the run as it moved it: the job's one read of the run, in the same statement. Its id, in its
    // log entry, lets a later attempt of this job know the claim for its own if this one cannot finish (`unsettled`).
    const claimId = randomUUID();
    // From before the claim is sent: a dialer stopped while its claim was on the way reads the answer only when it
    // resumes, whenever that is.
    const claimedAt = performance.now();
    let run: ClaimedRun | null = null;
    if (progress.unsettledClaim !== undefined) {
      // Taking the claim up is a claim of its own, under a new id: once it commits, this job's earlier id (which a
      // retry of this job after its dial would still carry) takes the run up no more.
      const held = heldClaimIds(progress);
      try {
        const fields = { fromNumber, maxCallDurationSeconds: config.maxCallDurationSeconds, definitionId: definition?.id };
        run = await this.runs.resumeClaim(runId, held, claimId, CLAIM_RESUMED, fields);
      } catch (error) {
        // An id under which the claim may have been taken up is kept, to be known for this job's own later; one Postgres
        // refused (read-only after a failover, a statement past its timeout) is no claim. The newest few only: while
        // writes fail and reads do not, the job comes back every 1-2 s, and its data must not grow with each.
        const resumingAs = answeredWithError(error)
          ? progress.resumingAs
          : [...(progress.resumingAs ?? []), claimId].slice(-RESUMING_IDS_KEPT);
        const claim = { unsettledClaim: progress.unsettledClaim, resumingAs };
        return this.unsettled(runId, claim, progress, 'taking the claim up got no answer', error);
      }
    }
    if (!run) {
      try {
        const fields = { definitionId: definition?.id, fromNumber, maxCallDurationSeconds: config.maxCallDurationSeconds };
        run = await this.writes.claim(runId, 'dialer.dialing', fields, { claim: claimId });
      } catch (error) {
        return this.unsettled(runId, { unsettledClaim: claimId }, progress, 'the claim got no answer', error);
      }
    }
    if (!run) {
      // A slot belongs to the run, not to the job: when another job for this run won the claim, the slot is the
      // winner's (acquiring it again only renewed its lease) and stays with the live call. A run read back in the
      // queue may be claimed and dialed again by then (a copy of this job admitted since): its slot is freed only as
      // this admission left it.
      await this.giveSlotBack(config.id, runId, admitted.lease);
      return done('skipped');
    }
    const claimed: ClaimedDial = { run, claimId, claimedAt, ...admitted, progress };
    try {
      if (run.provider !== config.provider) {
        await this.runs.setProvider(run.id, config.provider, { from: run.provider, to: config.provider });
      }
      if (!definition) {
        return await this.fail(run.id, 'definition_not_found', 'No definition of the workflow contains this trigger any more', ['dialing'], config.id, ownClaim(claimed));
      }
      let missingPaths: string[];
      try {
        ({ missingPaths } = await renderDefinition(this.renderer, definition.definition, { initial_context: run.initialContext }));
      } catch (error) {
        const message = `The agent's prompt could not be rendered: ${(error as Error).message}`;
        return await this.fail(run.id, 'template_error', message, ['dialing'], config.id, ownClaim(claimed));
      }
      if (missingPaths.length) {
        // A note for the run's history: losing it must not stop the call.
        await this.runs.setLog(run.id, 'template_missing_paths', missingPaths).catch((error: unknown) => {
          this.logger.warn({ run_id: run.id, err: error }, 'could not note the missing template paths');
        });
      }
    } catch (error) {
      // No dial went out: a later attempt takes the claim up again.
      return this.unsettled(run.id, { unsettledClaim: claimed.claimId }, progress, 'the run could not be ended before its dial', error);
    }
    return this.dial(claimed, config, credentials, fromNumber);
  }

  /** The claimed run's one dial, and what the carrier's answer makes of the run. */
  private async dial(
    claimed: ClaimedDial,
    config: TelephonyConfiguration,
    credentials: Record<string, unknown> | null,
    fromNumber: string,
  ): Promise<PlaceDecision> {
    const { run } = claimed;
    // A monotonic clock, which runs on while a process is stopped.
    const now = performance.now();
    const held = now - claimed.claimedAt;
    if (held > this.config.dialClaimLeaseMs) return this.handBackLapsedClaim(claimed, config, held);
    const late = now - claimed.admittedAt;
    // Within its rate window of its admission (a second, or 1/cps seconds below one call a second), the dial is still
    // counted there.
    const lateAfterMs = Math.max(DIAL_LATE_MS, rateWindow(config.callsPerSecond).windowMs);
    if (late > lateAfterMs && (claimed.progress.lateDials ?? 0) < MAX_LATE_DIALS) {
      // Counted in the rolling window at its admission, which has left the window since: counted again, now (a short
      // wait for room is waited out in place, as at the first admission).
      let again: Admission;
      try {
        again = await this.admit(config, run.id, false);
      } catch (error) {
        return this.unsettled(run.id, { unsettledClaim: claimed.claimId }, claimed.progress, 'a late dial could not be admitted again', error);
      }
      if (again.kind === 'admitted') claimed.lease = again.lease;
      // The admission waited on Redis, which may have been away past the claim's lease.
      const heldSince = performance.now() - claimed.claimedAt;
      if (heldSince > this.config.dialClaimLeaseMs) return this.handBackLapsedClaim(claimed, config, heldSince);
      if (again.kind !== 'admitted') return this.handBackLateDial(claimed, config, late);
    }
    const provider = this.providers.get(config.provider);
    const dial: DialAttempt = { to: run.phoneNumber, from: fromNumber, attemptedAt: new Date() };
    let result: PlaceCallResult;
    const sentAt = this.carrierPause.now();
    try {
      result = await provider.placeCall({
        runId: run.id,
        organizationId: run.organizationId,
        to: dial.to,
        from: dial.from,
        credentials,
        settings: config.settings,
        maxCallDurationSeconds: config.maxCallDurationSeconds,
        callbacks: callbackUrlsFor(this.config.publicBaseUrl, config.provider, run.id),
        ...(provider.streamsAtDial
          ? {
              agentStream: agentStreamFor(this.sessions, run.id, {
                defaultUrl: this.config.agentRuntimeUrl,
                settings: config.settings,
                lifetime: {
                  minimumSeconds: this.config.agentSessionTtlSeconds,
                  maxCallDurationSeconds: config.maxCallDurationSeconds,
                  beforeAnswerSeconds: this.config.dialTimeoutSeconds + this.config.ringTimeoutSeconds,
                  uploadTimeoutMs: this.config.httpRequestTimeoutMs,
                },
              }),
            }
          : {}),
      });
    } catch (error) {
      // No answer once sent (a timeout, a reset), or none for long on the way (a connection or handshake that timed out);
      // not a connection refused at once, which holds no worker. Else the carrier's own answer, if it came from it.
      const noAnswer = isCarrierNetworkFailure(error);
      const slow = this.carrierPause.now() - sentAt >= SLOW_NETWORK_FAILURE_MS;
      if (noAnswer && (!(error instanceof CarrierError) || slow)) this.carrierPause.unanswered(config.id, sentAt);
      else if (noAnswer) this.carrierPause.refusedAtOnce(config.id, sentAt);
      else if (error instanceof CarrierError && error.carrierCode !== undefined) this.carrierPause.answered(config.id);
      return this.afterDialError(claimed, config, provider, credentials, dial, error);
    }
    this.carrierPause.answered(config.id);
    // The call is placed: if storing its id fails, the job's retry finds the run claimed and leaves it, and the
    // id still arrives with the call's status events (or the reaper's look-up).
    await this.writes.recordProviderCallId(run.id, result.providerCallId);
    return done('placed');
  }

  /**
   * The slot of a run this job admitted but will not dial: freed once the run
   * has ended; left to a live call (whose lease the admission only renewed);
   * else freed only as this admission left it (a copy of the job admitted
   * since keeps its own).
   */
  private async giveSlotBack(configurationId: number, runId: number, lease: string): Promise<void> {
    const current = await this.reader.findById(runId);
    if (!current || isFinalRunStatus(current.status)) await this.slots.release(configurationId, runId);
    else if (!LIVE_STATUSES.includes(current.status)) await this.slots.releaseLease(configurationId, runId, lease);
  }

  /**
   * A dialer stopped or blocked since it sent its claim (a paused VM,
   * SIGSTOP, an event loop held) may have lost its job's lock meanwhile, and
   * the reaper handed the run to another dialer that placed the call: this
   * dial would be a second one. It is not sent. The run goes back to
   * `queued`, provided it is still `dialing` without a call under this very
   * claim (another dialer's claim since is left alone), its slot is freed,
   * and its job made sure of: a copy of it that ran on another dialer while
   * this one's lock had lapsed may have ended, finding the run claimed. When
   * the run cannot be handed back (the database away), the job comes back
   * for its claim.
   */
  private async handBackLapsedClaim(claimed: ClaimedDial, config: TelephonyConfiguration, heldMs: number): Promise<PlaceDecision> {
    const { run, claimId, progress } = claimed;
    const held_ms = Math.round(heldMs);
    this.logger.warn({ run_id: run.id, held_ms }, 'claim older than DIAL_CLAIM_LEASE_MS (the dialer was stopped or blocked): no dial sent');
    const lapses = (progress.claimLapses ?? 0) + 1;
    let moved;
    try {
      moved = await this.handBack(claimed, 'dialer.claim_lapsed', { held_ms });
    } catch (error) {
      // Counted all the same: a database slower than the lease is the likeliest reason this write failed.
      const counted = { ...progress, claimLapses: lapses };
      return this.unsettled(run.id, { unsettledClaim: claimId }, counted, 'a claim past its lease could not be handed back', error);
    }
    if (!moved) return done('skipped');
    await this.slots.releaseLease(config.id, run.id, claimed.lease);
    await this.dispatcher.ensureJobs([{ id: run.id, organization_id: run.organizationId }]);
    const waitMs = doublingDelay(UNSETTLED_RETRY_MS, lapses, MAX_LAPSED_CLAIM_WAIT_MS);
    return {
      kind: 'delay',
      untilMs: Date.now() + jitter(waitMs / 2, waitMs),
      progress: { carrierRetries: progress.carrierRetries, claimLapses: lapses, lateDials: progress.lateDials, carrierPausedMs: progress.carrierPausedMs },
      reason: 'claim_lapsed',
    };
  }

  /**
   * A dial past DIAL_LATE_MS after its admission is admitted again first, in
   * the rolling window as it is now: the database may have held its claim
   * back while the dials admitted at the configuration's pace meanwhile were
   * held with it, and sent now they would reach the carrier together, as
   * many at once as the stall lasted instants (a carrier refuses or queues
   * what passes its rate). A window with room (a dialer merely busy, or a
   * configuration far from its rate) lets it go; a full one sends it back:
   * the run goes back to `queued` under the guard of a lapsed claim, its
   * slot is freed (unless another job of the run has renewed it since), and
   * its job comes back at once to be paced again. At most MAX_LATE_DIALS
   * times a job: a database that is slow rather than stalled must not keep
   * its dials from going out.
   */
  private async handBackLateDial(claimed: ClaimedDial, config: TelephonyConfiguration, lateMs: number): Promise<PlaceDecision> {
    const { run, claimId, progress } = claimed;
    const lateDials = (progress.lateDials ?? 0) + 1;
    const late_ms = Math.round(lateMs);
    let moved;
    try {
      moved = await this.handBack(claimed, 'dialer.dial_late', { late_ms });
    } catch (error) {
      return this.unsettled(run.id, { unsettledClaim: claimId }, progress, 'a dial past its pacing instant could not be handed back', error);
    }
    if (!moved) return done('skipped');
    this.logger.log({ run_id: run.id, late_ms, late_dials: lateDials }, 'dial later than DIAL_LATE_MS after its pacing instant: paced again');
    await this.slots.releaseLease(config.id, run.id, claimed.lease);
    // As for a lapsed claim: a copy of the job that ran while this one was held (its lock lapsed) may have ended.
    await this.dispatcher.ensureJobs([{ id: run.id, organization_id: run.organizationId }]);
    return {
      kind: 'delay',
      untilMs: Date.now(),
      progress: { carrierRetries: progress.carrierRetries, claimLapses: progress.claimLapses, lateDials, carrierPausedMs: progress.carrierPausedMs },
      reason: 'dial_late',
    };
  }

  /**
   * Moves a claimed run that sent no dial back to `queued`: only while it is
   * `dialing` without a call under this very claim (another dialer's claim
   * since is left alone). Answers the move, or null.
   */
  private handBack(claimed: ClaimedDial, event: string, detail: Record<string, unknown>): Promise<TransitionOutcome | null> {
    return this.runs.transition(claimed.run.id, 'queued', event, {}, { claim: claimed.claimId, ...detail }, ['dialing'], ownClaim(claimed));
  }

  private limitsOf(config: TelephonyConfiguration): AdmissionLimits {
    return {
      callsPerSecond: config.callsPerSecond,
      maxConcurrentCalls: config.maxConcurrentCalls,
      // As long as the call can live before the reaper would end it: dialing, ringing, then the whole maximum, which
      // carriers count from the answer. Shorter, a slot could lapse under a call still talking and admit one too many.
      leaseMs:
        (this.config.dialTimeoutSeconds + this.config.ringTimeoutSeconds + config.maxCallDurationSeconds + ANSWERED_CALL_GRACE_SECONDS) * 1000,
    };
  }

  /**
   * Pacing (when `pace`), the rate window and a concurrency slot, in one
   * Redis round trip. A near pacing instant, and a short wait for room in the
   * rate window, are waited out in place before asking again (without
   * pacing: the instant is this dial's); longer waits are answered to the caller.
   * The admission is answered once its instant has come. `dueAt` is that instant by this
   * process's monotonic clock, counted from when Redis admitted the dial: a
   * dialer stalled after that (its answer read late, a blocked event loop)
   * finds the dial late at the dial, where counted from the answer it would
   * go out with every dial admitted before the stall; one whose ask waited
   * for Redis (away, its command held by the connection) does not. Redis'
   * instant is read by the wall clocks, taken within the time the ask took:
   * a dialer whose clock is behind Redis' by s misses a stall shorter than s
   * (README: keep them in step).
   */
  private async admit(config: TelephonyConfiguration, runId: number, pace: boolean): Promise<Admission & { dueAt: number }> {
    const limits = this.limitsOf(config);
    let askedAt = performance.now();
    let admission = await this.admission.admit(config.id, runId, limits, pace);
    if (admission.kind === 'rate' && admission.waitMs <= INLINE_PACING_WAIT_MS) {
      await sleep(admission.waitMs);
      askedAt = performance.now();
      admission = await this.admission.admit(config.id, runId, limits, false);
    }
    const answeredAt = performance.now();
    let dueAt = answeredAt;
    if (admission.kind === 'admitted') {
      const admittedBefore = Math.min(Math.max(0, Date.now() - admission.admittedAtMs), answeredAt - askedAt);
      dueAt = answeredAt - admittedBefore + admission.waitMs;
    }
    // Admitted for an instant just ahead (paced): go out on it. A timer cannot wait less than a millisecond, so a
    // nearer instant is dialed at once, as early as a timer would have made it late.
    if (admission.kind === 'admitted' && admission.waitMs >= 1) await sleep(admission.waitMs);
    return { ...admission, dueAt };
  }

  /**
   * Ends a run whose job ran out of attempts while it was still queued, and
   * frees a slot the last attempt may have taken. A run the job had claimed
   * is left alone: its call may be live, and the reaper settles it.
   */
  async giveUp(runId: number, message: string): Promise<void> {
    const ended = await this.runs.transition(
      runId,
      'failed',
      'dialer.gave_up',
      { endReason: 'dial_retries_exhausted', endedAt: new Date() },
      { message },
      ['queued'],
    );
    if (ended?.telephonyConfigurationId) await this.slots.release(ended.telephonyConfigurationId, runId);
  }

  private async afterDialError(
    claimed: ClaimedDial,
    config: TelephonyConfiguration,
    provider: TelephonyProvider,
    credentials: Record<string, unknown> | null,
    dial: DialAttempt,
    error: unknown,
  ): Promise<PlaceDecision> {
    const { run } = claimed;
    if (error instanceof CarrierError && error.permanent) {
      // The run ends first, then its slot is freed (as `fail` does): a run left `dialing` by a move that failed is
      // live to everyone else, and keeps its slot until the reaper ends it.
      // Only under this claim: a dialer that answers this late (frozen past its job's lock and the reaper's look-up)
      // may find the run dialed by another claim since, whose live call must not be ended, nor its slot freed.
      const rejected = { reason: error.reason, message: error.message, carrierCode: error.carrierCode ?? null };
      let ended;
      try {
        ended = await this.endRejected(run.id, rejected, ownClaim(claimed));
      } catch (writeError) {
        // No call was placed, and the run is still `dialing` under this claim: the job comes back to end it with this
        // answer, without a dial. Failed as it is, its retry would find the run claimed and leave it to the reaper,
        // which cannot tell most carriers' "no such call" from an unknown outcome.
        const what = 'the run could not be ended after the carrier rejected its dial';
        return this.unsettled(run.id, { unsettledClaim: claimed.claimId }, { ...claimed.progress, rejected }, what, writeError);
      }
      if (!ended) return done('skipped');
      await this.slots.release(config.id, run.id);
      return done('failed');
    }
    if (error instanceof CarrierError && error.notProcessed) {
      return this.retryLater(claimed, config, error.reason, error.message, error.retryAfterMs);
    }

    // The carrier may or may not have placed the call. Ask it (by our run, or by this dial's numbers and time); never dial blindly again.
    this.logger.warn({ run_id: run.id, err: error }, 'dial outcome unknown, asking the carrier');
    let lookup: CallLookup = await provider
      .lookupCall({ runId: run.id, organizationId: run.organizationId, providerCallId: null, credentials, settings: config.settings, dial })
      .catch((lookupError: unknown) => {
        this.logger.warn({ run_id: run.id, err: lookupError }, 'the carrier could not be asked about the dial');
        return { kind: 'unknown' as const };
      });
    if (lookup.kind === 'found' && provider.findsCallsByNumbers && (await this.runs.anotherOpenRunMayOwn(run, config.provider, dial.from, lookup.providerCallId))) {
      // The carrier's one call to these numbers may be another open run's: taking it would follow that call twice and
      // leave this run's own dial untracked. The outcome is unknown, as when the carrier cannot tell.
      this.logger.warn({ run_id: run.id, provider_call_id: lookup.providerCallId }, "the call found by the dial's numbers may be another run's");
      lookup = { kind: 'unknown' };
    }
    if (lookup.kind === 'found') {
      await this.runs.recordProviderCallId(run.id, lookup.providerCallId);
      await this.runs.appendEvent(run.id, 'dialer.reconciled', { provider_call_id: lookup.providerCallId });
      return done('placed');
    }
    if (lookup.kind === 'not_found') {
      return this.retryLater(claimed, config, 'carrier_no_call', (error as Error).message);
    }
    // The carrier cannot tell, so the call may be live: the run stays `dialing` and keeps its slot. Never dialed
    // again, it is moved on by the call's own status events, or settled by the reaper, which asks the carrier once
    // more and ends it `dial_outcome_unknown` past DIAL_TIMEOUT_SECONDS.
    await this.runs.appendEvent(run.id, 'dialer.outcome_unknown', { message: error instanceof Error ? error.message : String(error) });
    return done('unknown');
  }

  /**
   * The carrier did nothing: hand the run back to `queued` and come back after
   * a jittered backoff. When the run cannot be handed back (the database
   * away), the job comes back for its claim, which still placed no call, and
   * dials it on the slot it holds. So the slot is released only once the run
   * has left `dialing`: released first, it could go to another run meanwhile,
   * and the claim, refused a slot while its run waits `dialing`, be ended
   * `dial_outcome_unknown` by the reaper though no call was placed.
   */
  private async retryLater(
    claimed: ClaimedDial,
    config: TelephonyConfiguration,
    reason: string,
    message: string,
    retryAfterMs?: number,
  ): Promise<PlaceDecision> {
    const { run, claimId, progress } = claimed;
    const retries = (progress.carrierRetries ?? 0) + 1;
    const gaveUp = retries > MAX_CARRIER_RETRIES;
    let moved;
    try {
      // Only under this claim, as for a rejection: another claim's run is not this job's to end or queue again.
      moved = gaveUp
        ? await this.runs.transition(run.id, 'failed', 'dialer.carrier_gave_up', { endReason: reason, endedAt: new Date() }, { message }, ['dialing'], ownClaim(claimed))
        : await this.runs.transition(run.id, 'queued', 'dialer.retry', {}, { reason, message, retry: retries }, ['dialing'], ownClaim(claimed));
    } catch (error) {
      return this.unsettled(
        run.id,
        { unsettledClaim: claimId },
        { ...progress, carrierRetries: retries },
        'the run could not be handed back after the carrier refused its dial',
        error,
      );
    }
    // A run another moved on (the reaper) is not this job's any more, nor is its slot: the reaper frees it, and a
    // new claim of the run may hold it for a live call. A release that fails fails the job: its retry finds the run
    // ended and frees the slot, or queued and dials on it (`DialAdmission` does not pace a run holding a slot again),
    // without this backoff, which BullMQ's retry does not carry.
    if (!moved) return done('skipped');
    // Ended, the run has no call for a slot to hold: freed whoever renewed it. Queued again, it keeps a slot another
    // job of the run renewed since (the next admission reuses it, unpaced).
    if (gaveUp) {
      await this.slots.release(config.id, run.id);
      return done('failed');
    }
    await this.slots.releaseLease(config.id, run.id, claimed.lease);
    // As for a lapsed claim: a copy of the job that ran while this one waited for the carrier (its lock lapsed, the
    // dialer stopped) may have ended, finding the run claimed; this job's delay then does not hold.
    await this.dispatcher.ensureJobs([{ id: run.id, organization_id: run.organizationId }]);
    return {
      kind: 'delay',
      untilMs: Date.now() + carrierRetryDelayMs(retries, retryAfterMs),
      progress: { carrierRetries: retries, slotAt: undefined, lateDials: progress.lateDials, carrierPausedMs: progress.carrierPausedMs },
      reason,
    };
  }

  /**
   * This job's claim of the run sent no dial, and the run could not be moved
   * on from it: come back shortly, and take the claim up again then if it
   * committed (`PlaceCallProgress.unsettledClaim`, and `resumingAs` when the
   * claim was a resume whose answer was lost).
   */
  private unsettled(
    runId: number,
    claim: Pick<PlaceCallProgress, 'unsettledClaim' | 'resumingAs'>,
    progress: PlaceCallProgress,
    what: string,
    error: unknown,
  ): PlaceDecision {
    this.logger.warn({ run_id: runId, err: error }, `${what}; the job comes back for its claim`);
    return {
      kind: 'delay',
      untilMs: Date.now() + jitter(UNSETTLED_RETRY_MS / 2, UNSETTLED_RETRY_MS),
      progress: { ...progress, slotAt: undefined, unsettledClaim: claim.unsettledClaim, resumingAs: claim.resumingAs },
      reason: 'claim_unsettled',
    };
  }

  /**
   * Ends a run this job found it cannot dial, before any dial: the run still
   * `queued`, or `dialing` with no call under this job's unsettled claim (a
   * claim whose answer was lost, taken up by no one since), which is this
   * job's too. Left `dialing`, that run would hold its slot until the reaper
   * ended it, `dial_outcome_unknown` at most carriers, though nothing was sent.
   */
  private async failUndialed(
    runId: number,
    progress: PlaceCallProgress,
    reason: string,
    message: string,
    configurationId: number | null,
  ): Promise<PlaceDecision> {
    const queued = await this.fail(runId, reason, message, ['queued'], configurationId);
    if (progress.unsettledClaim === undefined || queued.kind !== 'done' || queued.outcome !== 'skipped') return queued;
    return this.fail(runId, reason, message, ['dialing'], configurationId, heldClaims(progress));
  }

  /** Ends `failed`, with the carrier's rejection, a run still `dialing` with no call under `guard`'s claims; null when it is not. */
  private endRejected(runId: number, rejected: NonNullable<PlaceCallProgress['rejected']>, guard: TransitionGuard) {
    const detail = { message: rejected.message, carrier_code: rejected.carrierCode };
    return this.runs.transition(runId, 'failed', 'carrier.rejected', { endReason: rejected.reason, endedAt: new Date() }, detail, ['dialing'], guard);
  }

  /**
   * Ends the run `failed` (from `from` only, and under `guard`: a claimed
   * run only under this job's own claim, not another's since) and then
   * frees the slot it holds under its configuration (`configurationId`),
   * which an earlier attempt may have taken even when this one failed
   * before its own: a run that cannot be ended is a claim its job comes
   * back for, on that slot, and a run another moved on is not this job's
   * to free (see `retryLater`).
   */
  private async fail(
    runId: number,
    reason: string,
    message: string,
    from: readonly RunStatus[],
    configurationId: number | null,
    guard?: TransitionGuard,
  ): Promise<PlaceDecision> {
    const ended = await this.runs.transition(runId, 'failed', 'dialer.failed', { endReason: reason, endedAt: new Date() }, { message }, from, guard);
    if (!ended) return done('skipped');
    if (configurationId !== null) await this.slots.release(configurationId, runId);
    return done('failed');
  }
}

function routeOf(run: WorkflowRun): PlaceCallRoute {
  return { telephonyConfigurationId: run.telephonyConfigurationId, workflowId: run.workflowId, environment: run.environment, triggerUuid: run.triggerUuid };
}

function done(outcome: 'placed' | 'skipped' | 'failed' | 'unknown'): PlaceDecision {
  return { kind: 'done', outcome };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function jitter(min: number, max: number): number {
  return Math.round(min + Math.random() * (max - min));
}

/** A move of a claimed run only while it is `dialing` without a call, its latest claim one of `ids` (not another's since). */
function underClaims(ids: readonly string[]): TransitionGuard {
  return { withoutCallId: true, latestClaim: { ids, resumeEvent: CLAIM_RESUMED } };
}

/** This job's unsettled claim, and the resumes of it whose answers were lost: any of them is the run's latest claim. */
function heldClaimIds(progress: PlaceCallProgress): string[] {
  return [progress.unsettledClaim!, ...(progress.resumingAs ?? [])];
}

function heldClaims(progress: PlaceCallProgress): TransitionGuard {
  return underClaims(heldClaimIds(progress));
}

function ownClaim(claimed: ClaimedDial): TransitionGuard {
  return underClaims([claimed.claimId]);
}
