import { Injectable } from '@nestjs/common';
import { Errors } from '@app/common';
import { NewRun, RunEnvironment, RunIdempotency, WorkflowRunStore } from '@app/persistence';
import { AuthenticatedKey, keyMayUseWorkflow } from '../auth/authenticated-key';
import { IdempotencyKeys } from '../idempotency/idempotency-keys.service';
import { RunIntake } from './run-intake.service';
import { TriggerCallDto, TriggerCallResponseDto } from './trigger-call.dto';
import { TriggerLookups, TriggerTarget } from './trigger-lookups.service';

/** A key seen held, then found empty, this many times in a row is answered 409 rather than tried forever. */
const MAX_CLAIM_ATTEMPTS = 3;

export interface TriggerOutcome {
  response: TriggerCallResponseDto;
  /** True when an `Idempotency-Key` repeat was answered with the first request's run. */
  replayed: boolean;
}

/**
 * Accepts a call request: checks the trigger, the key's access, the agent
 * definition and the telephony configuration (from memory, within
 * LOOKUP_CACHE_TTL_MS), then hands the run to the intake, which stores it
 * (claiming its Idempotency-Key in the same statement) and enqueues its dial
 * job together with the concurrent requests'. A request whose key is held
 * already is answered from the key: the earlier run, or a 422.
 */
@Injectable()
export class TriggerCallService {
  /**
   * This gateway's keyed requests on their way to being stored (waiting for
   * a grouped insert to take them, up to MAX_WAIT_MS, or in it), by
   * organization and key: a repeat refused by its checks meanwhile waits
   * for them before it answers (`refusedOrReplayed`).
   */
  private readonly storing = new Map<string, Set<Promise<unknown>>>();

  constructor(
    private readonly lookups: TriggerLookups,
    private readonly intake: RunIntake,
    private readonly idempotency: IdempotencyKeys,
    private readonly runs: WorkflowRunStore,
  ) {}

  async trigger(
    key: AuthenticatedKey,
    uuid: string,
    environment: RunEnvironment,
    body: TriggerCallDto,
    idempotencyKey: string | null = null,
  ): Promise<TriggerOutcome> {
    const endpoint = `${environment} ${uuid.toLowerCase()}`;
    const idempotency = idempotencyKey ? { key: idempotencyKey, requestHash: IdempotencyKeys.fingerprint(endpoint, fingerprinted(body)) } : null;
    // Keys claimed before `fingerprinted` (within their 24 h) hold the body's hash as it came; a repeat still matches it.
    const earlierFingerprint = () => IdempotencyKeys.fingerprint(endpoint, body);
    // Refused outright, without a look at the key: no request to this UUID by this organization was ever accepted (a
    // trigger row is never deleted, nor moves to another organization), and a key with no access to the agent gets
    // the same 403 from a replay. A look (a read, and a claim rolled back) for each made-up UUID would cost Postgres.
    const trigger = await this.accessibleTrigger(key, uuid);
    let run: NewRun;
    try {
      run = { ...(await this.prepareRun(key, trigger, environment, body)), idempotency };
    } catch (error) {
      if (!idempotency) throw error;
      return this.refusedOrReplayed(key, idempotency, earlierFingerprint, error);
    }
    // A key held by another request stores nothing: its run is answered. Only a key that expired (or was swept)
    // between the two statements sends the run again, which then claims it.
    for (let attempt = 1; ; attempt++) {
      const runId = await (idempotency ? this.whileStoring(storingName(key, idempotency), this.intake.accept(run)) : this.intake.accept(run));
      if (runId !== null) return { response: initiated(runId), replayed: false };
      // Only a run with a key is ever left unstored.
      const earlier = await this.idempotency.earlierRun(key, idempotency!, earlierFingerprint);
      if (earlier !== null) return this.replay(key, earlier);
      if (attempt === MAX_CLAIM_ATTEMPTS) {
        throw Errors.conflict('idempotency_request_in_flight', 'A request with this Idempotency-Key is still being processed');
      }
    }
  }

  /**
   * A keyed request refused by its checks: a repeat is answered as its
   * first request was, even if the trigger was deactivated since (the call
   * was accepted), once that first request is stored, whether it is still
   * waiting on this gateway for an insert or is being inserted by any; and a
   * key reused with another body is a 422 whatever else is wrong with the
   * request. Otherwise, the refusal.
   */
  private async refusedOrReplayed(
    key: AuthenticatedKey,
    idempotency: RunIdempotency,
    earlierFingerprint: () => string,
    refusal: unknown,
  ): Promise<TriggerOutcome> {
    const storing = this.storing.get(storingName(key, idempotency));
    if (storing) await Promise.allSettled(storing);
    const earlier = await this.idempotency.earlierRunOnceSettled(key, idempotency, earlierFingerprint);
    if (earlier) return this.replay(key, earlier);
    throw refusal;
  }

  /** `stored`, noted among this gateway's keyed requests on their way to being stored until it settles. */
  private whileStoring<T>(name: string, stored: Promise<T>): Promise<T> {
    const pending = this.storing.get(name) ?? new Set<Promise<unknown>>();
    this.storing.set(name, pending);
    pending.add(stored);
    const settled = () => {
      pending.delete(stored);
      if (pending.size === 0 && this.storing.get(name) === pending) this.storing.delete(name);
    };
    stored.then(settled, settled);
    return stored;
  }

  /**
   * Answers an earlier request's run again. Keys are per organization, so a
   * repeat may come with another API key of it: that key must have access to
   * the run's agent, as for a first request. A trigger deactivated since
   * still replays: the call was accepted, and a 404 would tell a retrying
   * client that it was not.
   */
  private async replay(key: AuthenticatedKey, runId: number): Promise<TriggerOutcome> {
    const run = await this.runs.findById(runId);
    if (!run || run.organizationId !== key.organizationId || !keyMayUseWorkflow(key, run.workflowId)) {
      throw Errors.forbidden('This API key has no access to this agent');
    }
    return { response: initiated(runId), replayed: true };
  }

  /** Checks the trigger, the key's access, the definition and the configuration; answers the run to store. */
  /** The trigger a UUID names, once the key is known to have access to its agent. */
  private async accessibleTrigger(key: AuthenticatedKey, uuid: string): Promise<TriggerTarget> {
    const trigger = await this.lookups.trigger(uuid);
    // Access before the trigger's and the agent's state: a key without it gets one 403 whether the trigger is active
    // and the agent published or not.
    if (trigger.organizationId !== key.organizationId) {
      throw Errors.forbidden('This API key belongs to another organization than the agent');
    }
    if (!keyMayUseWorkflow(key, trigger.workflowId)) throw Errors.forbidden('This API key has no access to this agent');
    return trigger;
  }

  private async prepareRun(key: AuthenticatedKey, trigger: TriggerTarget, environment: RunEnvironment, body: TriggerCallDto): Promise<NewRun> {
    this.lookups.assertRunnable(trigger, environment);
    const config = await this.lookups.configuration(key.organizationId, body.telephony_configuration_id ?? null);
    return {
      organizationId: key.organizationId,
      workflowId: trigger.workflowId,
      environment,
      triggerUuid: trigger.uuid,
      apiKeyId: key.id,
      telephonyConfigurationId: config.id,
      provider: config.provider,
      phoneNumber: body.phone_number,
      initialContext: body.initial_context ?? {},
    };
  }
}

function storingName(key: AuthenticatedKey, idempotency: RunIdempotency): string {
  return `${key.organizationId} ${idempotency.key}`;
}

function initiated(runId: number): TriggerCallResponseDto {
  return { status: 'initiated', workflow_run_id: runId, workflow_run_name: `WR-API-${runId}` };
}

/**
 * The request as its Idempotency-Key's fingerprint sees it: a field sent as
 * null, or an empty `initial_context`, means what leaving it out means (the
 * default configuration, no context), so a retry written by another client
 * library is the same request. A request without such fields is fingerprinted
 * as it came, as before this normal form.
 */
export function fingerprinted(body: TriggerCallDto): Record<string, unknown> {
  const { initial_context: context, telephony_configuration_id: configurationId, ...rest } = body;
  const request: Record<string, unknown> = { ...rest };
  if (context !== null && context !== undefined && Object.keys(context).length > 0) request.initial_context = context;
  if (configurationId !== null && configurationId !== undefined) request.telephony_configuration_id = configurationId;
  return request;
}
