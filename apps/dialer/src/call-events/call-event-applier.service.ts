import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import {
  isFinalRunStatus,
  RUN_TRANSITIONS,
  RunReader,
  RunStatus,
  RunTransitionFields,
  talkedAndEnded,
  TelephonyConfiguration,
  TransitionOutcome,
  WorkflowRun,
  WorkflowRunStore,
} from '@app/persistence';
import { CallEventJob, CallEventsQueue, ConcurrencyLimiter, eventsOf } from '@app/queue';
import { CallReference, callReferenceOf, CredentialsCipher, hangsUpOnMachines, TelephonyProviders } from '@app/telephony';
import { ConfigurationLookup } from '../lookups/configuration-lookup.service';
import { GroupedRunWrites } from '../runs/grouped-run-writes.service';
import { RunArtifactsCollector } from './run-artifacts-collector.service';

/**
 * The waits before each new look-up of the price of a call that talked and
 * ended (`talkedAndEnded`), after the one at the hang-up found none (1, 6 and
 * 36 minutes after it): Twilio prices a call some time after it ends,
 * usually within minutes.
 */
export const PRICE_LOOKUP_DELAYS_MS: readonly number[] = [60_000, 5 * 60_000, 30 * 60_000];

/** How long a failure that may follow an answer waits again while a job with the run's answer is still queued. */
export const ANSWER_QUEUED_RECHECK_MS = 1_000;

/** Where a carrier's failure moves a run from: an answered run is ended `completed` instead (`endAnsweredCall`). */
const FAILED_BEFORE_ANSWER = { from: RUN_TRANSITIONS.failed.filter((status) => status !== 'in_progress'), statuses: [] };

const STATUS_BY_EVENT: Record<Exclude<CallEventJob['type'], 'recording' | 'cost' | 'price_lookup'>, RunStatus> = {
  ringing: 'ringing',
  answered: 'in_progress',
  completed: 'completed',
  busy: 'busy',
  no_answer: 'no_answer',
  failed: 'failed',
  canceled: 'canceled',
};

/**
 * Applies carrier status events to runs, for every provider alike. Each is a
 * conditional forward move, so a duplicate, late or out-of-order event
 * changes nothing once the run has moved past it. Answered calls get the
 * answering-machine verdict (and a hang-up when the configuration says so);
 * a carrier recording is noted to be fetched; a completed call is finished
 * by storing its artifacts.
 */
@Injectable()
export class CallEventApplier {
  private readonly logger = new Logger(CallEventApplier.name);

  constructor(
    private readonly runs: WorkflowRunStore,
    private readonly reader: RunReader,
    private readonly writes: GroupedRunWrites,
    private readonly configurations: ConfigurationLookup,
    private readonly artifacts: RunArtifactsCollector,
    private readonly slots: ConcurrencyLimiter,
    private readonly providers: TelephonyProviders,
    private readonly cipher: CredentialsCipher,
    private readonly events: CallEventsQueue,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * Applies a job's events, in the order they happened; true when any of
   * them moved the run. `lastAttempt`: the job will not be retried, so an
   * event that is too early is applied as best it can be. `receivedAtMs`:
   * when the job was enqueued, by our clock.
   */
  async applyJob(job: CallEventJob, lastAttempt = false, receivedAtMs = Date.now()): Promise<boolean> {
    const events = eventsOf(job);
    if (job.nothingBetween && (await this.applyAsOneMove(events))) return true;
    let moved = false;
    for (const event of events) moved = (await this.apply(event, lastAttempt, receivedAtMs)) || moved;
    return moved;
  }

  async apply(event: CallEventJob, lastAttempt = false, receivedAtMs = Date.now()): Promise<boolean> {
    if (event.type === 'recording') {
      if (event.recordingUrl) await this.runs.recordCarrierRecordingUrl(event.runId, event.recordingUrl);
      // A run this finishes has had the recording dealt with (stored, or left out for good): only a run that had
      // finished before takes it as a late one.
      const finished = await this.artifacts.collect(event.runId);
      if (event.recordingUrl && !finished) await this.artifacts.storeLateRecording(event.runId, lastAttempt);
      return false;
    }
    if (event.type === 'cost') return this.applyCost(event, lastAttempt);
    if (event.type === 'price_lookup') return this.lookUpPriceAgain(event);
    if (event.type === 'failed' && (await this.endAnsweredCall(event))) return true;
    if (event.type === 'failed' && event.answerUnknown && !lastAttempt) await this.waitForLateAnswer(event, receivedAtMs);
    const through = event.type === 'failed' ? FAILED_BEFORE_ANSWER : undefined;
    const moved = await this.writes.transition(event.runId, STATUS_BY_EVENT[event.type], `carrier.${event.type}`, fieldsOf(event), detailOf(event), through);
    if (!moved && event.type === 'failed') {
      let status = (await this.reader.findById(event.runId))?.status;
      // Answered between the look at the run above and this move (their jobs ran side by side): an answered call.
      if (status === 'in_progress' && (await this.endAnsweredCall(event))) return true;
      if (status === 'in_progress') status = (await this.reader.findById(event.runId))?.status;
      if (status === 'completed') {
        // The retry of a failure after an answer whose move to `completed` was stored before its job stopped: what
        // follows a completion is still to do (idempotent, as for the retry of a hang-up).
        await this.afterStatusEvent(asCompletion(event), null);
        return false;
      }
    }
    await this.afterStatusEvent(event, moved);
    return moved !== null;
  }

  /**
   * A failure whose cause does not tell whether the call was answered, for a
   * run not answered yet: the answer of a call that was may be in a job
   * running beside this one, or in a webhook the carrier delivers again
   * (Telnyx does not promise the order of its webhooks). Applied now, the
   * run would end `failed` and lose what the answer brings (duration,
   * recording, transcript). Its job waits until LATE_ANSWER_WAIT_MS after
   * it reached us (when the gateway enqueued it, whatever the carrier's
   * clock says; delayed, not retried, so it spends no attempt), and is
   * applied then: an answered call ends `completed`, one that was not ends
   * `failed` that much later. A gateway's clock ahead of this dialer's by
   * more than the wait is not waited for, and no delay is longer than the
   * wait, so the clocks' disagreement cannot hold a run for longer than
   * twice the wait.
   *
   * Past the wait, an answer that reached us meanwhile is in the queue
   * (`holdsAnswerOf`): behind this job when the queue is behind, or being
   * applied beside it. The failure then waits ANSWER_QUEUED_RECHECK_MS more
   * at a time, until that job is applied or given up, however far the queue
   * is behind.
   */
  private async waitForLateAnswer(event: CallEventJob, receivedAtMs: number): Promise<void> {
    const waitMs = this.config.lateAnswerWaitMs;
    const now = Date.now();
    const due = receivedAtMs + waitMs;
    if (due - now > 2 * waitMs) return;
    const status = (await this.reader.findById(event.runId))?.status;
    if (status !== 'dialing' && status !== 'ringing') return;
    const untilMs = now < due ? Math.min(due, now + waitMs) : (await this.events.holdsAnswerOf(event.runId)) ? now + ANSWER_QUEUED_RECHECK_MS : null;
    if (untilMs !== null) {
      throw new EventTooEarly(`a failure of run ${event.runId} whose cause does not tell whether its call was answered`, untilMs);
    }
  }

  /**
   * A failure reported for a call already answered: the conversation took
   * place, and the carrier's cause says only how it ended (a Telnyx
   * `call.hangup` with a cause its table does not list, `unspecified` say).
   * The run ends `completed`, the cause kept in its log entry, so its
   * duration, recording and transcript are kept: a `failed` run is never
   * finished with artifacts. True when the run moved so.
   */
  private async endAnsweredCall(event: CallEventJob): Promise<boolean> {
    const asCompleted = asCompletion(event);
    const detail = { ...detailOf(event), reported_as: 'failed' };
    const moved = await this.writes.transition(event.runId, 'completed', 'carrier.hangup_after_answer', fieldsOf(asCompleted), detail, {
      from: ['in_progress'],
      statuses: [],
    });
    if (!moved) return false;
    await this.afterStatusEvent(asCompleted, moved);
    return true;
  }

  /**
   * Status events reported together with nothing to do between them (a
   * sandbox call without ring or talk time and without the built-in agent:
   * ringing, answered and completed at one instant) move the run once, past
   * the statuses in between, each still logged: one row version and one
   * statement instead of one per event. Only from a status the first of
   * them may move from, so the run and its log end as applying them one by
   * one would leave them; a run anywhere else (a duplicate job, a run that
   * moved meanwhile) gets them one by one. False when they did not move the
   * run as one.
   */
  private async applyAsOneMove(events: CallEventJob[]): Promise<boolean> {
    if (!movableAsOne(events)) return false;
    const last = events[events.length - 1];
    const fields: RunTransitionFields = Object.assign({}, ...events.map(fieldsOf));
    const through = {
      from: RUN_TRANSITIONS[statusOf(events[0])],
      statuses: events.slice(0, -1).map((event) => ({ status: statusOf(event), event: `carrier.${event.type}`, detail: detailOf(event) })),
    };
    const moved = await this.writes.transition(last.runId, statusOf(last), `carrier.${last.type}`, fields, detailOf(last), through);
    if (!moved) return false;
    await this.afterStatusEvent(last, moved);
    return true;
  }

  /** What follows a status event once its move was tried: `moved` is null when the run did not move. */
  private async afterStatusEvent(event: CallEventJob, moved: TransitionOutcome | null): Promise<void> {
    const to = statusOf(event);
    const occurredAt = new Date(event.occurredAt);
    let ended: WorkflowRun | null = null;
    if (!moved) {
      this.logger.debug({ run_id: event.runId, event: event.type }, 'carrier event changed nothing');
      // An answer applied after the hang-up (their jobs ran side by side) still tells when the call was answered,
      // and so how long it lasted when the carrier did not say; the answer itself, applied after the machine verdict
      // that moved the run, tells it better than the verdict's time did.
      const exact = !event.answerTimeEstimated;
      if (event.type === 'answered' && (await this.runs.fillAnsweredAt(event.runId, occurredAt, exact))) await this.runs.fillDuration(event.runId);
      // Cost and recordings may come with a late event for a call that already ended.
      if (event.cost) await this.runs.mergeCostInfo(event.runId, { total_cost: event.cost.amount, currency: event.cost.currency });
      if (isFinalRunStatus(to)) ended = await this.releaseSlotOfEndedRun(event.runId);
    } else if (isFinalRunStatus(to) && moved.telephonyConfigurationId !== null) {
      await this.slots.release(moved.telephonyConfigurationId, event.runId);
    }
    if (event.recordingUrl) await this.runs.recordCarrierRecordingUrl(event.runId, event.recordingUrl);
    // The carrier's duration, even one that comes after the hang-up (Telnyx bills it on call.cost), replaces
    // a duration computed from answer to hang-up; without one, the computed one fills a run that has none.
    // The move to `completed` has already stored a carrier duration that came with it.
    const durationStored = moved !== null && event.durationSeconds !== undefined;
    if (event.type === 'completed' && !durationStored) await this.runs.fillDuration(event.runId, event.durationSeconds);
    if (event.type === 'completed' && !event.cost) {
      // Also for the retry of a hang-up whose move was stored before its job stopped, short of the look-up.
      if (moved) await this.fetchPrice(event, moved.telephonyConfigurationId);
      else if (awaitsPrice(ended)) await this.fetchPrice(event, ended.telephonyConfigurationId);
    }
    if (event.type === 'answered' && moved) {
      await this.afterAnswer(event, moved.telephonyConfigurationId, true);
    } else if (event.type === 'answered' && event.answeredBy) {
      // The answering-machine verdict may come after the answer was applied, or even after the hang-up was.
      const run = await this.reader.findById(event.runId);
      if (run?.status === 'in_progress') await this.afterAnswer(event, run.telephonyConfigurationId, false);
      else if (run?.status === 'completed') await this.runs.mergeGatheredContext(event.runId, { answered_by: event.answeredBy });
    }
    // A hang-up applied before the verdict was stored waited for an agent report, which a machine that is hung up
    // on never sends. Collected again once the verdict is stored, the run ends now rather than when the reaper forces it.
    if (event.type === 'answered' && event.answeredBy) await this.artifacts.collect(event.runId);
    // Also after a lost race or a retry: finishing the artifacts is idempotent.
    if (event.type === 'completed') await this.artifacts.collect(event.runId);
  }

  /**
   * A price that comes on its own (Telnyx's `call.cost`) is stored once the
   * call has ended, with the seconds billed beside it (the run's duration
   * stays its talk time: billing rounds it up to whole minutes). Applied
   * before the hang-up, it fails its job with `EventTooEarly`, whose retry
   * comes after the hang-up has been applied. A hang-up that never comes
   * (lost; the reaper ends such a run only after the maximum call duration)
   * must not cost the price as well: the job's last attempt stores it all
   * the same, and notes `carrier.cost_before_hangup`.
   */
  private async applyCost(event: CallEventJob, lastAttempt: boolean): Promise<boolean> {
    const run = await this.reader.findById(event.runId);
    if (!run) return false;
    if (!isFinalRunStatus(run.status)) {
      if (!lastAttempt) throw new EventTooEarly(`a price for run ${event.runId}, whose hang-up has not been applied yet`);
      this.logger.warn({ run_id: event.runId, status: run.status }, 'a price whose hang-up never came: stored without it');
      await this.runs.appendEvent(event.runId, 'carrier.cost_before_hangup', { status: run.status });
    }
    const cost = {
      ...(event.cost ? { total_cost: event.cost.amount, currency: event.cost.currency } : {}),
      ...(event.billedSeconds !== undefined ? { billed_duration_seconds: event.billedSeconds } : {}),
    };
    if (Object.keys(cost).length) await this.runs.mergeCostInfo(event.runId, cost);
    return false;
  }

  /**
   * A final event that moved nothing may be the retry of one that did and
   * whose job stopped before it freed the slot (the process died, Redis
   * failed the release): a run that has ended holds no slot, and releasing
   * one is idempotent, so a duplicate costs a read and nothing else.
   * Answers the run as read.
   */
  private async releaseSlotOfEndedRun(runId: number): Promise<WorkflowRun | null> {
    const run = await this.reader.findById(runId);
    if (run && isFinalRunStatus(run.status) && run.telephonyConfigurationId !== null) await this.slots.release(run.telephonyConfigurationId, runId);
    return run;
  }

  /**
   * A hang-up that came without a price is followed by a look-up at carriers
   * whose look-up can tell it (Twilio shows it on the Call resource only).
   * A call the carrier has not priced yet is looked up again after each of
   * PRICE_LOOKUP_DELAYS_MS; after the last, `carrier.price_unavailable` is
   * noted. A price is worth a look-up, not a failed event: without one the
   * run keeps what it has.
   */
  private async fetchPrice(event: CallEventJob, configurationId: number | null, lookup = 0): Promise<void> {
    const config = await this.configurations.find(configurationId);
    if (!config || !this.providers.has(config.provider)) return;
    const provider = this.providers.get(config.provider);
    if (!provider.pricesOnLookup) return;
    let cost: CallEventJob['cost'];
    try {
      const found = await provider.lookupCall(this.referenceOf(event, config));
      cost = found.kind === 'found' ? found.events.find((step) => step.type === 'completed')?.cost : undefined;
    } catch (error) {
      this.logger.warn({ run_id: event.runId, err: error }, 'could not look up the call price');
    }
    if (cost) {
      await this.runs.mergeCostInfo(event.runId, { total_cost: cost.amount, currency: cost.currency });
      return;
    }
    if (lookup >= PRICE_LOOKUP_DELAYS_MS.length) {
      await this.runs.appendEvent(event.runId, 'carrier.price_unavailable', { lookups: lookup + 1 });
      return;
    }
    const next: CallEventJob = {
      runId: event.runId,
      organizationId: event.organizationId,
      provider: event.provider,
      providerCallId: event.providerCallId,
      type: 'price_lookup',
      occurredAt: new Date().toISOString(),
      lookup: lookup + 1,
    };
    await this.events.enqueueEvent(next, PRICE_LOOKUP_DELAYS_MS[lookup], priceLookupJobId(event.runId, lookup + 1));
  }

  /** A look-up of an ended call's price after the one at the hang-up found none; nothing if a price came since. */
  private async lookUpPriceAgain(event: CallEventJob): Promise<boolean> {
    const run = await this.reader.findById(event.runId);
    if (!awaitsPrice(run)) return false;
    await this.fetchPrice(event, run.telephonyConfigurationId, event.lookup ?? 1);
    return false;
  }

  private referenceOf(event: CallEventJob, config: TelephonyConfiguration): CallReference {
    return callReferenceOf({ id: event.runId, organizationId: event.organizationId, providerCallId: event.providerCallId }, config, this.cipher);
  }

  private async afterAnswer(event: CallEventJob, configurationId: number | null, firstAnswer: boolean): Promise<void> {
    if (event.answeredBy) await this.runs.mergeGatheredContext(event.runId, { answered_by: event.answeredBy });
    const config = await this.configurations.find(configurationId);
    if (!config || !this.providers.has(config.provider)) return;
    const provider = this.providers.get(config.provider);
    const reference = this.referenceOf(event, config);
    // As the carrier reads the configuration (detection on, no `machine_action`: a hang-up). On Telnyx the agent is
    // connected at dial time, so this hang-up is the only one the call gets; the others' carrier hangs up itself, by
    // the answer instructions (Twilio) or by the dial's `machine_detection: hangup` (Plivo, Vonage).
    if (event.answeredBy === 'machine' && hangsUpOnMachines(config.settings)) {
      await this.runs.appendEvent(event.runId, 'dialer.machine_hangup');
      if (provider.streamsAtDial) await provider.endCall(reference);
      return;
    }
    if (!firstAnswer) return;
    try {
      await provider.afterAnswer?.(reference);
    } catch (error) {
      // The call goes on; without the agent's report the run keeps the carrier's own artifacts.
      this.logger.warn({ run_id: event.runId, err: error }, 'carrier-side answer handling failed');
      await this.runs.appendEvent(event.runId, 'carrier.answer_handling_failed', { message: (error as Error).message });
    }
  }
}

/** A call that talked and has ended (completed, or hung up by the reaper past its limit) and has no price yet. */
function awaitsPrice(run: WorkflowRun | null): run is WorkflowRun {
  return run !== null && talkedAndEnded(run) && run.costInfo?.total_cost === undefined;
}

/** The job id of a call's `lookup`-th price look-up after the hang-up: one each, so none collapses into another. */
export function priceLookupJobId(runId: number, lookup: number): string {
  return `run-${runId}-price-lookup-${lookup}`;
}

/**
 * An event that can be applied only after another one of its call: its job
 * is retried later, or, when `untilMs` is given, delayed until then without
 * spending an attempt.
 */
export class EventTooEarly extends Error {
  constructor(
    what: string,
    readonly untilMs?: number,
  ) {
    super(`Too early for ${what}`);
    this.name = 'EventTooEarly';
  }
}

type StatusEvent = CallEventJob & { type: keyof typeof STATUS_BY_EVENT };

function isStatusEvent(event: CallEventJob): event is StatusEvent {
  return event.type in STATUS_BY_EVENT;
}

function statusOf(event: CallEventJob): RunStatus {
  return STATUS_BY_EVENT[event.type as StatusEvent['type']];
}

/**
 * Whether events reported together can be one move: status events of one
 * run, each a move the one before it allows, none but the last final, and
 * none that asks for work of its own once applied (an answering-machine
 * verdict, a recording, a price).
 */
/** A failure after an answer, as the completion it is taken for (`endAnsweredCall`): the cause goes to the log only. */
function asCompletion(event: CallEventJob): CallEventJob {
  return { ...event, type: 'completed', reason: undefined };
}

function movableAsOne(events: CallEventJob[]): boolean {
  if (events.length < 2 || !events.every(isStatusEvent)) return false;
  const last = events[events.length - 1];
  // A failure after an answer ends the call completed (`endAnsweredCall`), which one move to `failed` would not.
  if (last.type === 'failed' && events.some((event) => event.type === 'answered')) return false;
  return events.every(
    (event, index) =>
      event.runId === last.runId &&
      !event.answeredBy &&
      !event.recordingUrl &&
      (event === last || (!event.cost && !isFinalRunStatus(statusOf(event)))) &&
      (index === 0 || RUN_TRANSITIONS[statusOf(event)].includes(statusOf(events[index - 1]))),
  );
}

/** The run's columns a status event sets. */
function fieldsOf(event: CallEventJob): RunTransitionFields {
  const to = statusOf(event);
  const occurredAt = new Date(event.occurredAt);
  const fields: RunTransitionFields = { providerCallId: event.providerCallId };
  if (event.type === 'answered') fields.answeredAt = occurredAt;
  if (isFinalRunStatus(to)) {
    fields.endedAt = occurredAt;
    fields.endReason = event.type === 'failed' ? (event.reason ?? 'carrier_failed') : event.type;
  }
  if (event.type === 'completed' && event.durationSeconds !== undefined) fields.durationSeconds = Math.max(0, event.durationSeconds);
  const cost = costInfoOf(event);
  if (cost) fields.costInfo = cost;
  return fields;
}

/** The detail of a status event's log entry. */
function detailOf(event: CallEventJob): Record<string, unknown> {
  return {
    provider: event.provider,
    provider_call_id: event.providerCallId,
    ...(event.reason ? { reason: event.reason } : {}),
    ...(event.answeredBy ? { answered_by: event.answeredBy } : {}),
    // Told to `fillAnsweredAt`: the answer's own report, coming later, replaces the time this one stored.
    ...(event.answerTimeEstimated ? { estimated_answer_at: event.occurredAt } : {}),
  };
}

function costInfoOf(event: CallEventJob): Record<string, unknown> | null {
  const cost: Record<string, unknown> = {};
  if (event.type === 'completed' && event.durationSeconds !== undefined) cost.call_duration_seconds = Math.max(0, event.durationSeconds);
  if (event.cost) {
    cost.total_cost = event.cost.amount;
    cost.currency = event.cost.currency;
  }
  return Object.keys(cost).length ? cost : null;
}
