import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DomainError, Errors, FoundOrMissingCache } from '@app/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { RunEnvironment, TelephonyConfiguration } from '@app/persistence';

/** What a trigger UUID leads to: its workflow, and whether each live definition still holds the trigger. */
export interface TriggerTarget {
  uuid: string;
  organizationId: number;
  workflowId: number;
  isActive: boolean;
  /** Absent: there is no such definition; otherwise whether it contains this trigger. */
  draftHasTrigger?: boolean;
  publishedHasTrigger?: boolean;
}

export type UsableConfiguration = Pick<TelephonyConfiguration, 'id' | 'provider' | 'fromNumbers'>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The look-ups every trigger request makes (trigger → workflow → definition,
 * and the telephony configuration), kept in memory for LOOKUP_CACHE_TTL_MS at
 * most. A change made through this replica's API is seen at once (the writer
 * calls `forgetOrganization`); other replicas see it within the TTL.
 */
@Injectable()
export class TriggerLookups {
  // Both are looked up by what the caller sends (a trigger UUID, a configuration id): the ones found are kept apart
  // from the ones not, so a stream of made-up UUIDs or ids cannot push the real ones out (`FoundOrMissingCache`).
  private readonly targets: FoundOrMissingCache<string, TriggerTarget | null>;
  private readonly configurations: FoundOrMissingCache<string, UsableConfiguration | DomainError>;

  constructor(
    private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.targets = new FoundOrMissingCache(config.lookupCacheTtlMs, (target) => target !== null);
    this.configurations = new FoundOrMissingCache(config.lookupCacheTtlMs, (answer) => !(answer instanceof DomainError));
  }

  /**
   * The trigger a UUID names, active or not, whatever its definitions hold;
   * a 404 when none does. Whether it can run (active, and in the definition
   * the environment runs) is `assertRunnable`'s to say, once the caller is
   * known to have access: that state is not for another organization's key
   * to read.
   */
  async trigger(uuid: string): Promise<TriggerTarget> {
    if (!UUID.test(uuid)) throw triggerNotFound();
    const key = uuid.toLowerCase();
    const target = await this.targets.get(key, () => this.loadTarget(key));
    if (!target) throw triggerNotFound();
    return target;
  }

  /** Throws the 404 that says why this trigger cannot run in the environment; read from the target, no query. */
  assertRunnable(target: TriggerTarget, environment: RunEnvironment): void {
    if (!target.isActive) throw triggerNotFound();
    // Production runs the published definition; test runs the draft, else the published one.
    const hasTrigger =
      environment === 'test' ? (target.draftHasTrigger ?? target.publishedHasTrigger) : target.publishedHasTrigger;
    if (hasTrigger === undefined) {
      throw Errors.notFound('agent_not_published', 'The agent has no published version; publish it or use the test URL');
    }
    if (!hasTrigger) {
      throw Errors.notFound('trigger_not_found', 'The agent version that would run no longer contains this trigger');
    }
  }

  /** The configuration the call goes through: the one asked for, else the organization's default. */
  async configuration(organizationId: number, requestedId: number | null): Promise<UsableConfiguration> {
    const answer = await this.configurations.get(`${organizationId}:${requestedId ?? 'default'}`, () =>
      this.loadConfiguration(organizationId, requestedId),
    );
    // A fresh error each time: the cached one is shared by every request that reads it.
    if (answer instanceof DomainError) throw new DomainError(answer.status, answer.code, answer.message, answer.details);
    return answer;
  }

  /** Drops what is cached for one organization, and every unknown-trigger answer; call after a write. */
  forgetOrganization(organizationId: number): void {
    this.targets.forget((_uuid, target) => target === null || target.organizationId === organizationId);
    this.configurations.forget((key) => key.startsWith(`${organizationId}:`));
  }

  private async loadTarget(uuid: string): Promise<TriggerTarget | null> {
    const rows: Array<{
      uuid: string;
      organization_id: number;
      workflow_id: number;
      is_active: boolean;
      status: 'draft' | 'published' | null;
      has_trigger: boolean | null;
    }> = await this.dataSource.query(
      `SELECT t.uuid, t.organization_id, t.workflow_id, t.is_active, d.status,
              d.definition->'nodes' @> jsonb_build_array(jsonb_build_object(
                'type', 'trigger', 'data', jsonb_build_object('trigger_path', t.uuid::text))) AS has_trigger
         FROM api_triggers t
         LEFT JOIN workflow_definitions d ON d.workflow_id = t.workflow_id AND d.status IN ('draft', 'published')
        WHERE t.uuid = $1`,
      [uuid],
    );
    if (rows.length === 0) return null;
    const target: TriggerTarget = {
      uuid: rows[0].uuid,
      organizationId: rows[0].organization_id,
      workflowId: rows[0].workflow_id,
      isActive: rows[0].is_active,
    };
    for (const row of rows) {
      if (row.status === 'draft') target.draftHasTrigger = row.has_trigger === true;
      if (row.status === 'published') target.publishedHasTrigger = row.has_trigger === true;
    }
    return target;
  }

  private async loadConfiguration(
    organizationId: number,
    requestedId: number | null,
  ): Promise<UsableConfiguration | DomainError> {
    const [config]: UsableConfiguration[] =
      requestedId !== null
        ? await this.dataSource.query(
            `SELECT id, provider, from_numbers AS "fromNumbers" FROM telephony_configurations WHERE id = $1 AND organization_id = $2`,
            [requestedId, organizationId],
          )
        : await this.dataSource.query(
            `SELECT id, provider, from_numbers AS "fromNumbers" FROM telephony_configurations
              WHERE organization_id = $1 AND is_default_outbound`,
            [organizationId],
          );
    if (config) {
      if (config.fromNumbers.length > 0) return config;
      return Errors.telephonyNotConfigured(`Telephony configuration ${config.id} has no from number; add one to from_numbers`);
    }
    if (requestedId !== null) {
      return Errors.notFound(
        'telephony_configuration_not_found',
        `Telephony configuration ${requestedId} does not exist in this organization`,
      );
    }
    const any = await this.dataSource.getRepository(TelephonyConfiguration).existsBy({ organizationId });
    return Errors.telephonyNotConfigured(
      any
        ? 'No telephony configuration is the default for outbound calls; mark one with is_default_outbound or pass telephony_configuration_id'
        : 'The organization has no telephony configuration; create one before placing calls',
    );
  }
}

function triggerNotFound(): DomainError {
  return Errors.notFound('trigger_not_found', 'No active API trigger has this UUID');
}
