import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, QueryDeepPartialEntity } from 'typeorm';
import { DomainError, Errors, jsonValueProblem } from '@app/common';
import { lockOrganization, TelephonyConfiguration } from '@app/persistence';
import { CredentialsCheck, CredentialsCipher, TelephonyProviders } from '@app/telephony';
import { TriggerLookups } from '../triggers/trigger-lookups.service';
import { CreateTelephonyConfigurationDto } from './create-telephony-configuration.dto';
import { telephonyConfigurationNotFound } from './telephony-configuration-not-found.error';
import { TelephonyConfigurationPage, TelephonyConfigurationView } from './telephony-configuration-view';
import { readPage } from '../paging/id-cursor';
import { PageQuery } from '../paging/page-query';
import { UpdateTelephonyConfigurationDto } from './update-telephony-configuration.dto';

const DEFAULTS = { callsPerSecond: 1, maxConcurrentCalls: 10, maxCallDurationSeconds: 3600 };

/**
 * An organization's carrier accounts. Every write takes a row lock on the
 * organization first, so "the first one becomes the default" and "at most one
 * default" hold under concurrent requests (clear the old default, then set).
 * A change or a delete also locks the configuration's own row before reading
 * it, so neither acts on a row another writer is changing or removing.
 */
@Injectable()
export class TelephonyConfigurationsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly providers: TelephonyProviders,
    private readonly cipher: CredentialsCipher,
    private readonly lookups: TriggerLookups,
  ) {}

  async create(organizationId: number, input: CreateTelephonyConfigurationDto): Promise<TelephonyConfigurationView> {
    const credentials = input.credentials ?? null;
    const settings = input.settings ?? {};
    this.assertProviderAccepts(input.provider, credentials, settings);
    const credentialsEncrypted = credentials ? this.cipher.encrypt(credentials) : null;

    const view = await this.dataSource.transaction(async (manager) => {
      await lockOrganization(manager, organizationId);
      const repository = manager.getRepository(TelephonyConfiguration);
      const isFirst = !(await repository.existsBy({ organizationId }));
      const isDefault = input.is_default_outbound ?? isFirst;
      if (isDefault) await clearDefault(manager, organizationId);
      const row = await repository.save({
        organizationId,
        name: input.name,
        provider: input.provider,
        credentialsEncrypted,
        fromNumbers: input.from_numbers,
        isDefaultOutbound: isDefault,
        callsPerSecond: input.calls_per_second ?? DEFAULTS.callsPerSecond,
        maxConcurrentCalls: input.max_concurrent_calls ?? DEFAULTS.maxConcurrentCalls,
        maxCallDurationSeconds: input.max_call_duration_seconds ?? DEFAULTS.maxCallDurationSeconds,
        settings,
      });
      return TelephonyConfigurationView.from(row);
    });
    this.lookups.forgetOrganization(organizationId);
    return view;
  }

  /** A page of the organization's configurations, newest first. */
  async list(organizationId: number, query: PageQuery): Promise<TelephonyConfigurationPage> {
    const page = await readPage(this.dataSource.getRepository(TelephonyConfiguration), { organizationId }, query);
    return { telephony_configurations: page.items.map((row) => TelephonyConfigurationView.from(row)), next_cursor: page.nextCursor };
  }

  async get(organizationId: number, id: number): Promise<TelephonyConfigurationView> {
    const row = await this.dataSource.getRepository(TelephonyConfiguration).findOneBy({ id, organizationId });
    if (!row) throw telephonyConfigurationNotFound();
    return TelephonyConfigurationView.from(row);
  }

  async update(organizationId: number, id: number, input: UpdateTelephonyConfigurationDto): Promise<TelephonyConfigurationView> {
    const view = await this.dataSource.transaction(async (manager) => {
      await lockOrganization(manager, organizationId);
      const repository = manager.getRepository(TelephonyConfiguration);
      // FOR NO KEY UPDATE, what the UPDATE below would take anyway, taken before the read: a delete waits for this
      // change instead of removing the row between the read and the write.
      const row = await repository.findOne({ where: { id, organizationId }, lock: { mode: 'for_no_key_update' } });
      if (!row) throw telephonyConfigurationNotFound();

      // A run's `mode` and the check of its webhooks follow the provider stored with it, its dial, look-ups and hang-up
      // the configuration's: the configuration may change carrier only once none of its runs is unfinished.
      if (input.provider !== undefined && input.provider !== row.provider) {
        const unfinished = await unfinishedRuns(manager, id);
        if (unfinished > 0) throw configurationInUse(id, unfinished, 'change its provider');
      }
      // A new provider re-checks what it would inherit; new credentials or settings are checked as given.
      const provider = input.provider ?? row.provider;
      if (input.provider !== undefined || input.credentials !== undefined || input.settings !== undefined) {
        const credentials = input.credentials !== undefined ? input.credentials : this.storedCredentials(row);
        this.assertProviderAccepts(provider, credentials, input.settings ?? row.settings);
      }
      if (provider === row.provider && input.credentials !== undefined && this.movesAccount(row, input.credentials)) {
        // A call stays in the carrier account it was placed in: under another account's credentials its webhooks
        // fail their signature check, and its hang-up and look-ups are refused, until the reaper guesses its end.
        // A new token or key of the same account is taken at once.
        const unfinished = await unfinishedRuns(manager, id);
        if (unfinished > 0) throw configurationInUse(id, unfinished, 'move it to another carrier account');
      }
      if (input.is_default_outbound === true && !row.isDefaultOutbound) await clearDefault(manager, organizationId);

      // An UPDATE, never `save`: save inserts an entity it does not find, which brought a deleted configuration back
      // (with a new id and the old credentials) when a delete got in first.
      const updated = await repository.update(
        { id, organizationId },
        {
          provider,
          name: input.name,
          credentialsEncrypted:
            input.credentials === undefined ? undefined : input.credentials ? this.cipher.encrypt(input.credentials) : null,
          fromNumbers: input.from_numbers,
          isDefaultOutbound: input.is_default_outbound,
          callsPerSecond: input.calls_per_second,
          maxConcurrentCalls: input.max_concurrent_calls,
          maxCallDurationSeconds: input.max_call_duration_seconds,
          // TypeORM's partial-update type has no room for a JSON object of unknown values; jsonb takes it as is.
          settings: input.settings as QueryDeepPartialEntity<TelephonyConfiguration>['settings'],
        },
      );
      if (!updated.affected) throw telephonyConfigurationNotFound();
      return TelephonyConfigurationView.from(await repository.findOneByOrFail({ id }));
    });
    this.lookups.forgetOrganization(organizationId);
    return view;
  }

  /** Asks the carrier whether the stored credentials work; 502 when the carrier cannot be reached. */
  async verify(organizationId: number, id: number): Promise<CredentialsCheck> {
    const row = await this.dataSource.getRepository(TelephonyConfiguration).findOneBy({ id, organizationId });
    if (!row) throw telephonyConfigurationNotFound();
    // Outside the try: credentials this server cannot decrypt (another SECRETS_KEY) are its own failure, a 503
    // `credentials_unreadable` logged for its operator, not a carrier that could not be reached.
    const credentials = this.storedCredentials(row);
    try {
      return await this.providers.get(row.provider).checkCredentials(credentials);
    } catch (error) {
      throw new DomainError(502, 'carrier_unreachable', `The carrier could not be asked: ${(error as Error).message}`);
    }
  }

  /**
   * Refused (409 `configuration_in_use`) while a run placed through it is not
   * complete: hanging its call up, its carrier's webhooks and collecting its
   * recording all need the configuration's credentials until the run is
   * complete (`is_completed`, which a `completed` call reaches only once its
   * artifacts are stored). Deleting the default leaves the organization
   * without one until another is marked.
   */
  async remove(organizationId: number, id: number): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      await lockOrganization(manager, organizationId);
      const row = await manager
        .getRepository(TelephonyConfiguration)
        .findOne({ where: { id, organizationId }, lock: { mode: 'pessimistic_write' } });
      if (!row) throw telephonyConfigurationNotFound();
      // A run a trigger is storing right now is not counted: its look-up of this configuration came before the delete
      // (or from another replica's cache, LOOKUP_CACHE_TTL_MS at most) and its insert locks nothing. The dialer fails
      // such a run `telephony_configuration_missing`, unless its own cache still holds the configuration.
      const unfinished = await unfinishedRuns(manager, id);
      if (unfinished > 0) throw configurationInUse(id, unfinished, 'delete it');
      await manager.getRepository(TelephonyConfiguration).delete({ id, organizationId });
    });
    this.lookups.forgetOrganization(organizationId);
  }

  /**
   * Whether `credentials` name another carrier account than the stored ones.
   * Stored credentials this server cannot read name none: its runs cannot be
   * served under them anyway, and new ones are the repair.
   */
  private movesAccount(row: TelephonyConfiguration, credentials: Record<string, unknown> | null): boolean {
    if (!this.providers.has(row.provider)) return false;
    const carrier = this.providers.get(row.provider);
    let stored: string | null;
    try {
      stored = carrier.accountOf(this.storedCredentials(row));
    } catch {
      return false;
    }
    return stored !== null && stored !== carrier.accountOf(credentials);
  }

  private storedCredentials(row: TelephonyConfiguration): Record<string, unknown> | null {
    return row.credentialsEncrypted === null ? null : this.cipher.decrypt(row.credentialsEncrypted);
  }

  private assertProviderAccepts(
    providerName: string,
    credentials: Record<string, unknown> | null,
    settings: Record<string, unknown>,
  ): void {
    if (!this.providers.has(providerName)) {
      throw Errors.validation(`provider must be one of: ${this.providers.names().join(', ')}`, [
        { field: 'provider', message: `unknown provider ${JSON.stringify(providerName)}` },
      ]);
    }
    const provider = this.providers.get(providerName);
    // Stored as jsonb: text Postgres refuses, or a number that is not the one sent, is named before the provider's rules.
    const unstorable = jsonValueProblem(settings, 'settings');
    const problems = [
      ...provider.validateCredentials(credentials).map((message) => ({ field: 'credentials', message })),
      ...(unstorable ? [{ field: 'settings', message: unstorable }] : []),
      ...provider.validateSettings(settings).map((message) => ({ field: 'settings', message })),
    ];
    if (problems.length) throw Errors.validation(problems.map((problem) => problem.message).join('; '), problems);
  }
}

/** Runs placed (or to be placed) through the configuration that are not complete yet. */
async function unfinishedRuns(manager: EntityManager, id: number): Promise<number> {
  const [{ unfinished }]: Array<{ unfinished: number }> = await manager.query(
    `SELECT count(*)::int AS unfinished FROM workflow_runs WHERE telephony_configuration_id = $1 AND NOT is_completed`,
    [id],
  );
  return unfinished;
}

function configurationInUse(id: number, unfinished: number, action: 'delete it' | 'change its provider' | 'move it to another carrier account'): DomainError {
  return Errors.conflict(
    'configuration_in_use',
    `Telephony configuration ${id} is used by ${unfinished} unfinished run${unfinished === 1 ? '' : 's'}; ` +
      `cancel them or wait until they are complete, then ${action}`,
  );
}

async function clearDefault(manager: EntityManager, organizationId: number): Promise<void> {
  await manager.query(
    `UPDATE telephony_configurations SET is_default_outbound = false, updated_at = now()
      WHERE organization_id = $1 AND is_default_outbound`,
    [organizationId],
  );
}
