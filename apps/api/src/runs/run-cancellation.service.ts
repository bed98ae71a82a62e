import { Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DomainError, Errors, isDatabaseUnavailable, withTimeout } from '@app/common';
import { TelephonyConfiguration, WorkflowRun, WorkflowRunStore } from '@app/persistence';
import { ConcurrencyLimiter } from '@app/queue';
import { callReferenceOf, CarrierError, CredentialsCipher, isCarrierNetworkFailure, TelephonyProviders } from '@app/telephony';
import { CanceledRunInstants } from './canceled-run-instants.service';

export type CancelOutcome = 'canceled' | 'hangup_requested';

/** How long a cancel waits for Redis to free a canceled run's slot before it answers anyway (the lease ends it). */
const SLOT_RELEASE_WAIT_MS = 1_000;
/** Conditional cancels of a queued run that a dialer keeps taking and handing back, before the answer says so. */
const QUEUED_CANCEL_ATTEMPTS = 3;

/**
 * Cancels a run that has not been answered; a run canceled already is
 * answered as canceled again. A queued (or waiting) run is
 * canceled at once by a conditional update, so its dial job finds it
 * canceled and does nothing (the job is dropped, and the pacing instant it
 * may have reserved given back once none of its configuration's runs is
 * queued: `CanceledRunInstants`). A ringing call is hung up through its carrier;
 * the carrier's `canceled` event then ends the run.
 */
@Injectable()
export class RunCancellation {
  private readonly logger = new Logger(RunCancellation.name);

  constructor(
    private readonly dataSource: DataSource,
    private readonly runs: WorkflowRunStore,
    private readonly providers: TelephonyProviders,
    private readonly cipher: CredentialsCipher,
    private readonly instants: CanceledRunInstants,
    private readonly slots: ConcurrencyLimiter,
  ) {}

  async cancel(run: WorkflowRun): Promise<CancelOutcome> {
    // A run a dialer claimed since it was read may be back in the queue by the time it is read again (the carrier
    // throttled its dial): it is tried again, a few times, rather than answered as a call that cannot be canceled.
    for (let attempt = 0; run.status === 'queued' && attempt < QUEUED_CANCEL_ATTEMPTS; attempt++) {
      // Only while it is still queued: a run a dialer claimed since it was read is being placed, and canceling it
      // here would end the run while its call still goes out.
      const canceled = await this.runs.transition(run.id, 'canceled', 'api.canceled', { endReason: 'canceled', endedAt: new Date() }, undefined, [
        'queued',
      ]);
      if (canceled) {
        if (run.telephonyConfigurationId !== null) {
          await this.releaseSlot(run.telephonyConfigurationId, run.id);
          this.instants.queuedRunCanceled(run.id, run.telephonyConfigurationId);
        }
        return 'canceled';
      }
      // It was claimed meanwhile: go on with the fresh state.
      run = (await this.runs.findById(run.id)) ?? run;
    }
    if (run.status === 'queued') {
      throw Errors.conflict('run_not_cancelable', 'The run went to a dialer and back while it was canceled; try again');
    }
    // Asked again (its answer was lost, or a hang-up that went through answered 502): what was asked for is done.
    if (run.status === 'canceled') return 'canceled';
    if ((run.status === 'dialing' || run.status === 'ringing') && run.providerCallId) {
      const config = run.telephonyConfigurationId
        ? await this.dataSource.getRepository(TelephonyConfiguration).findOneBy({ id: run.telephonyConfigurationId })
        : null;
      if (!config) {
        // Deleting a configuration is refused while its runs are unfinished; one that is gone all the same (deleted
        // before that rule, or by a trigger racing the delete) leaves no credentials to ask the carrier with.
        throw Errors.conflict(
          'run_not_cancelable',
          'The telephony configuration this call was placed through no longer exists, so the carrier cannot be asked to hang it up',
        );
      }
      if (this.providers.has(config.provider)) {
        const hungUp = await this.providers
          .get(config.provider)
          .hangup(callReferenceOf(run, config, this.cipher))
          .catch((error: unknown) => {
            throw hangupFailure(error);
          });
        if (hungUp) {
          // A note for the run's history: the carrier is hanging the call up, and its `canceled` event ends the run,
          // whether or not the note is stored. Failing the answer for it would have the client ask again.
          await this.runs.appendEvent(run.id, 'api.hangup_requested').catch((error: unknown) => {
            this.logger.warn({ run_id: run.id, err: error }, 'hang-up requested but not noted in the run log');
          });
          return 'hangup_requested';
        }
      }
    }
    if (run.status === 'dialing' && !run.providerCallId) {
      throw Errors.conflict(
        'run_not_cancelable',
        'The carrier has not given this call an id yet (it is being placed, or its outcome is not known yet); try again later',
      );
    }
    throw Errors.conflict(
      'run_not_cancelable',
      run.status === 'dialing' || run.status === 'ringing'
        ? 'The carrier did not hang this call up: it has been answered (an answered call is not canceled) or has ended ' +
          '(a hang-up asked for earlier may have ended it: the run ends `canceled` then)'
        : `A run that is ${run.status} cannot be canceled`,
    );
  }

  /**
   * A queued run may hold its configuration's concurrency slot: its dial was
   * admitted and stopped before its claim (an error, a dialer that died), and
   * its job would have freed the slot on its next attempt, but the job is
   * dropped now. A queued run has no call, so the slot is freed here; were it
   * left, it would hold back the configuration's other calls until its lease
   * ran out (the maximum call duration). Best effort: the lease still ends it.
   */
  private async releaseSlot(configurationId: number, runId: number): Promise<void> {
    // Bounded: with Redis away the command would wait for it, and the cancel, already stored, would not be answered.
    await withTimeout(this.slots.release(configurationId, runId), SLOT_RELEASE_WAIT_MS, 'freeing the slot of a canceled run').catch((error: unknown) => {
      this.logger.warn({ run_id: runId, telephony_configuration_id: configurationId, err: error }, 'slot of a canceled run not freed');
    });
  }
}

/**
 * What a failed hang-up answers. The carrier refused it (a 4xx other than
 * 429: credentials, a call it will not end): 409, retrying will not help.
 * It could not be asked (unreachable, 5xx, 429): 502, and a retry may work;
 * after a reset or a timeout the hang-up may have reached the carrier, whose
 * `canceled` event then ends the run all the same. Our own failures (the
 * database) keep their own answer.
 *
 * A request that got no answer is recognised first: a carrier client may
 * report a refused connection as a not-processed `CarrierError` (which reads
 * as a refusal below), and it carries the socket error (ECONNREFUSED,
 * ECONNRESET) that a database outage also has.
 */
function hangupFailure(error: unknown): unknown {
  if (isCarrierNetworkFailure(error)) return carrierUnreachable(error);
  if (isDatabaseUnavailable(error) || (error as Error | null)?.name === 'QueryFailedError') return error;
  const status = (error as { status?: unknown } | null)?.status;
  const refused =
    error instanceof CarrierError
      ? error.permanent || (error.notProcessed && !error.throttled)
      : typeof status === 'number' && status >= 400 && status < 500 && status !== 429;
  return refused
    ? Errors.conflict('run_not_cancelable', `The carrier refused the hang-up: ${messageOf(error)}`)
    : carrierUnreachable(error);
}

function carrierUnreachable(error: unknown): DomainError {
  return new DomainError(502, 'carrier_unreachable', `The carrier could not be asked to hang up: ${messageOf(error)}`);
}

function messageOf(error: unknown): string {
  return (error as Error | null)?.message ?? String(error);
}
