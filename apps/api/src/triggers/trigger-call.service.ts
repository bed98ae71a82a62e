import { Injectable } from '@nestjs/common';
import { Errors } from '@app/common';
import { NewRun, RunEnvironment, WorkflowRunStore } from '@app/persistence';
import { AuthenticatedKey, keyMayUseWorkflow } from '../auth/authenticated-key';
import { IdempotencyKeys } from '../idempotency/idempotency-keys.service';
import { RunIntake } from './run-intake.service';
import { TriggerCallDto, TriggerCallResponseDto } from './trigger-call.dto';
import { TriggerLookups } from './trigger-lookups.service';

export interface TriggerOutcome {
  response: TriggerCallResponseDto;
  /** True when an `Idempotency-Key` repeat was answered with the first request's run. */
  replayed: boolean;
}

/**
 * Accepts a call request: checks the trigger, the key's access, the agent
 * definition and the telephony configuration (from memory, within
 * LOOKUP_CACHE_TTL_MS), then hands the run to the intake, which stores it and
 * enqueues its dial job together with the concurrent requests'.
 */
@Injectable()
export class TriggerCallService {
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
    if (idempotencyKey) {
      const fingerprint = IdempotencyKeys.fingerprint(`${environment} ${uuid.toLowerCase()}`, body);
      const claim = await this.idempotency.claim(key.organizationId, idempotencyKey, fingerprint);
      if (claim.kind === 'replay') {
        await this.mayReplay(key, claim.runId);
        return { response: initiated(claim.runId), replayed: true };
      }
    }
    let runId: number;
    try {
      const run = await this.prepareRun(key, uuid, environment, body);
      runId = await this.intake.accept({ ...run, idempotencyKey });
    } catch (error) {
      // Nothing was stored: free the key so a retry is processed afresh.
      if (idempotencyKey) await this.idempotency.release(key.organizationId, idempotencyKey).catch(() => undefined);
      throw error;
    }
    return { response: initiated(runId), replayed: false };
  }

  /**
   * Keys are per organization, so a repeat may come with another API key of
   * it: that key must have access to the run's agent, as for a first request.
   * A trigger deactivated since still replays: the call was accepted, and a
   * 404 would tell a retrying client that it was not.
   */
  private async mayReplay(key: AuthenticatedKey, runId: number): Promise<void> {
    const run = await this.runs.findById(runId);
    if (!run || run.organizationId !== key.organizationId || !keyMayUseWorkflow(key, run.workflowId)) {
      throw Errors.forbidden('This API key has no access to this agent');
    }
  }

  /** Checks the trigger, the key's access, the definition and the configuration; answers the run to store. */
  private async prepareRun(
    key: AuthenticatedKey,
    uuid: string,
    environment: RunEnvironment,
    body: TriggerCallDto,
  ): Promise<NewRun> {
    const trigger = await this.lookups.activeTrigger(uuid, environment);
    if (trigger.organizationId !== key.organizationId) {
      throw Errors.forbidden('This API key belongs to another organization than the agent');
    }
    if (!keyMayUseWorkflow(key, trigger.workflowId)) throw Errors.forbidden('This API key has no access to this agent');
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

function initiated(runId: number): TriggerCallResponseDto {
  return { status: 'initiated', workflow_run_id: runId, workflow_run_name: `WR-API-${runId}` };
}
