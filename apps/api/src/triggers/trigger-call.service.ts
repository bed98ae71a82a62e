import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DomainError, Errors, withTimeout } from '@app/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { ApiTrigger, RunEnvironment, TelephonyConfiguration, WorkflowRunStore } from '@app/persistence';
import { CallsQueue } from '@app/queue';
import { AuthenticatedKey, keyMayUseWorkflow } from '../auth/authenticated-key';
import { IdempotencyKeys } from '../idempotency/idempotency-keys.service';
import { TriggerCallDto, TriggerCallResponseDto } from './trigger-call.dto';

export interface TriggerOutcome {
  response: TriggerCallResponseDto;
  /** True when an `Idempotency-Key` repeat was answered with the first request's run. */
  replayed: boolean;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Accepts a call request: checks the trigger, the key's access, the agent
 * definition and the telephony configuration, then stores the run. The run
 * row is the promise: once it is committed the call will be placed, so the
 * dial job is enqueued with a short deadline and, when Redis is slow or
 * away, left to the dialer's dispatcher instead of holding the answer.
 */
@Injectable()
export class TriggerCallService {
  private readonly logger = new Logger(TriggerCallService.name);

  constructor(
    private readonly dataSource: DataSource,
    private readonly runs: WorkflowRunStore,
    private readonly callsQueue: CallsQueue,
    private readonly idempotency: IdempotencyKeys,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
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
      if (claim.kind === 'replay') return { response: initiated(claim.runId), replayed: true };
    }
    let runId: number;
    try {
      runId = await this.storeRun(key, uuid, environment, body, idempotencyKey);
    } catch (error) {
      // Nothing was stored: free the key so a retry is processed afresh.
      if (idempotencyKey) await this.idempotency.release(key.organizationId, idempotencyKey).catch(() => undefined);
      throw error;
    }
    await this.enqueue(runId, key.organizationId);
    return { response: initiated(runId), replayed: false };
  }

  private async storeRun(
    key: AuthenticatedKey,
    uuid: string,
    environment: RunEnvironment,
    body: TriggerCallDto,
    idempotencyKey: string | null,
  ): Promise<number> {
    const trigger = await this.findActiveTrigger(uuid);
    if (trigger.organizationId !== key.organizationId) {
      throw Errors.forbidden('This API key belongs to another organization than the agent');
    }
    if (!keyMayUseWorkflow(key, trigger.workflowId)) throw Errors.forbidden('This API key has no access to this agent');
    await this.assertDefinitionRunsTrigger(trigger, environment);
    const config = await this.resolveConfiguration(key.organizationId, body.telephony_configuration_id ?? null);

    const run = {
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
    // Without a key the single INSERT is atomic by itself; a key is recorded in the same transaction as the run.
    if (!idempotencyKey) return (await this.runs.insertQueued([run]))[0];
    return this.dataSource.transaction(async (manager) => {
      const [runId] = await this.runs.insertQueued([run], manager);
      await this.idempotency.complete(manager, key.organizationId, idempotencyKey, runId);
      return runId;
    });
  }

  /** Best effort within ENQUEUE_TIMEOUT_MS; a run left without a job is enqueued by the dispatcher. */
  private async enqueue(runId: number, organizationId: number): Promise<void> {
    try {
      await withTimeout(
        this.callsQueue.enqueuePlaceCall([{ runId, organizationId }]),
        this.config.enqueueTimeoutMs,
        'enqueueing the dial job',
      );
    } catch (error) {
      this.logger.warn({ run_id: runId, err: error }, 'dial job not enqueued now; the dispatcher will enqueue it');
    }
  }

  private async findActiveTrigger(uuid: string): Promise<Pick<ApiTrigger, 'uuid' | 'organizationId' | 'workflowId'>> {
    if (!UUID.test(uuid)) throw triggerNotFound();
    const [trigger]: Array<{ uuid: string; organization_id: number; workflow_id: number; is_active: boolean }> =
      await this.dataSource.query(
        `SELECT uuid, organization_id, workflow_id, is_active FROM api_triggers WHERE uuid = $1`,
        [uuid.toLowerCase()],
      );
    if (!trigger || !trigger.is_active) throw triggerNotFound();
    return { uuid: trigger.uuid, organizationId: trigger.organization_id, workflowId: trigger.workflow_id };
  }

  /** Production runs the published definition; test runs the draft, else the published one. */
  private async assertDefinitionRunsTrigger(
    trigger: Pick<ApiTrigger, 'uuid' | 'workflowId'>,
    environment: RunEnvironment,
  ): Promise<void> {
    const rows: Array<{ status: string; has_trigger: boolean }> = await this.dataSource.query(
      `SELECT status,
              definition->'nodes' @> jsonb_build_array(jsonb_build_object(
                'type', 'trigger', 'data', jsonb_build_object('trigger_path', $2::text))) AS has_trigger
         FROM workflow_definitions
        WHERE workflow_id = $1 AND status IN ('draft', 'published')`,
      [trigger.workflowId, trigger.uuid],
    );
    const draft = rows.find((row) => row.status === 'draft');
    const published = rows.find((row) => row.status === 'published');
    const chosen = environment === 'test' ? (draft ?? published) : published;
    if (!chosen) {
      throw Errors.notFound('agent_not_published', 'The agent has no published version; publish it or use the test URL');
    }
    if (!chosen.has_trigger) {
      throw Errors.notFound('trigger_not_found', 'The agent version that would run no longer contains this trigger');
    }
  }

  private async resolveConfiguration(organizationId: number, requestedId: number | null): Promise<UsableConfiguration> {
    if (requestedId !== null) {
      const [config]: UsableConfiguration[] = await this.dataSource.query(
        `SELECT id, provider, from_numbers AS "fromNumbers" FROM telephony_configurations WHERE id = $1 AND organization_id = $2`,
        [requestedId, organizationId],
      );
      if (!config) {
        throw Errors.notFound(
          'telephony_configuration_not_found',
          `Telephony configuration ${requestedId} does not exist in this organization`,
        );
      }
      return assertUsable(config);
    }
    const [config]: UsableConfiguration[] = await this.dataSource.query(
      `SELECT id, provider, from_numbers AS "fromNumbers" FROM telephony_configurations
        WHERE organization_id = $1 AND is_default_outbound`,
      [organizationId],
    );
    if (!config) {
      const any = await this.dataSource.getRepository(TelephonyConfiguration).existsBy({ organizationId });
      throw Errors.telephonyNotConfigured(
        any
          ? 'No telephony configuration is the default for outbound calls; mark one with is_default_outbound or pass telephony_configuration_id'
          : 'The organization has no telephony configuration; create one before placing calls',
      );
    }
    return assertUsable(config);
  }
}

type UsableConfiguration = Pick<TelephonyConfiguration, 'id' | 'provider' | 'fromNumbers'>;

function assertUsable(config: UsableConfiguration): UsableConfiguration {
  if (config.fromNumbers.length === 0) {
    throw Errors.telephonyNotConfigured(`Telephony configuration ${config.id} has no from number; add one to from_numbers`);
  }
  return config;
}

function initiated(runId: number): TriggerCallResponseDto {
  return { status: 'initiated', workflow_run_id: runId, workflow_run_name: `WR-API-${runId}` };
}

function triggerNotFound(): DomainError {
  return Errors.notFound('trigger_not_found', 'No active API trigger has this UUID');
}
