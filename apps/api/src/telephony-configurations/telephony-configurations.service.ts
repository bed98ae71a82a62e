import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { DomainError, Errors } from '@app/common';
import { TelephonyConfiguration } from '@app/persistence';
import { CredentialsCheck, CredentialsCipher, TelephonyProviders } from '@app/telephony';
import { TriggerLookups } from '../triggers/trigger-lookups.service';
import { CreateTelephonyConfigurationDto } from './create-telephony-configuration.dto';
import { telephonyConfigurationNotFound } from './telephony-configuration-not-found.error';
import { TelephonyConfigurationView } from './telephony-configuration-view';
import { UpdateTelephonyConfigurationDto } from './update-telephony-configuration.dto';

const DEFAULTS = { callsPerSecond: 1, maxConcurrentCalls: 10, maxCallDurationSeconds: 3600 };

/**
 * An organization's carrier accounts. Every write takes a row lock on the
 * organization first, so "the first one becomes the default" and "at most one
 * default" hold under concurrent requests (clear the old default, then set).
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

  async list(organizationId: number): Promise<TelephonyConfigurationView[]> {
    const rows = await this.dataSource
      .getRepository(TelephonyConfiguration)
      .find({ where: { organizationId }, order: { id: 'DESC' } });
    return rows.map((row) => TelephonyConfigurationView.from(row));
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
      const row = await repository.findOneBy({ id, organizationId });
      if (!row) throw telephonyConfigurationNotFound();

      // A new provider re-checks what it would inherit; new credentials or settings are checked as given.
      const provider = input.provider ?? row.provider;
      if (input.provider !== undefined || input.credentials !== undefined || input.settings !== undefined) {
        const credentials = input.credentials !== undefined ? input.credentials : this.storedCredentials(row);
        this.assertProviderAccepts(provider, credentials, input.settings ?? row.settings);
      }
      if (input.credentials !== undefined) {
        row.credentialsEncrypted = input.credentials ? this.cipher.encrypt(input.credentials) : null;
      }
      if (input.is_default_outbound === true && !row.isDefaultOutbound) await clearDefault(manager, organizationId);

      row.provider = provider;
      row.name = input.name ?? row.name;
      row.fromNumbers = input.from_numbers ?? row.fromNumbers;
      row.isDefaultOutbound = input.is_default_outbound ?? row.isDefaultOutbound;
      row.callsPerSecond = input.calls_per_second ?? row.callsPerSecond;
      row.maxConcurrentCalls = input.max_concurrent_calls ?? row.maxConcurrentCalls;
      row.maxCallDurationSeconds = input.max_call_duration_seconds ?? row.maxCallDurationSeconds;
      row.settings = input.settings ?? row.settings;
      return TelephonyConfigurationView.from(await repository.save(row));
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

  /** Deleting the default leaves the organization without one until another is marked. */
  async remove(organizationId: number, id: number): Promise<void> {
    const result = await this.dataSource.getRepository(TelephonyConfiguration).delete({ id, organizationId });
    if (!result.affected) throw telephonyConfigurationNotFound();
    this.lookups.forgetOrganization(organizationId);
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
    const problems = [
      ...provider.validateCredentials(credentials).map((message) => ({ field: 'credentials', message })),
      ...provider.validateSettings(settings).map((message) => ({ field: 'settings', message })),
    ];
    if (problems.length) throw Errors.validation(problems.map((problem) => problem.message).join('; '), problems);
  }
}

async function lockOrganization(manager: EntityManager, organizationId: number): Promise<void> {
  await manager.query('SELECT id FROM organizations WHERE id = $1 FOR UPDATE', [organizationId]);
}

async function clearDefault(manager: EntityManager, organizationId: number): Promise<void> {
  await manager.query(
    `UPDATE telephony_configurations SET is_default_outbound = false, updated_at = now()
      WHERE organization_id = $1 AND is_default_outbound`,
    [organizationId],
  );
}
