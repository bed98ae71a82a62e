import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ExpiringCache } from '@app/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { configurationFromRow, TelephonyConfiguration } from '@app/persistence';

/**
 * Telephony configurations as the dialer reads them: every call and most
 * carrier events need their configuration, and it changes rarely, so a row
 * is kept for LOOKUP_CACHE_TTL_MS at most (the bound on how long a change made
 * through the API takes to reach a dialer, pacing and concurrency limits
 * included). The organization check stays with the caller's own row.
 */
@Injectable()
export class ConfigurationLookup {
  private readonly cache: ExpiringCache<number, TelephonyConfiguration | null>;

  constructor(
    private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.cache = new ExpiringCache(config.lookupCacheTtlMs);
  }

  /** The configuration, or null when it does not exist or belongs to another organization than `organizationId`. */
  async find(id: number | null, organizationId?: number): Promise<TelephonyConfiguration | null> {
    if (id === null) return null;
    const configuration = await this.cache.get(id, () => this.load(id));
    if (configuration && organizationId !== undefined && configuration.organizationId !== organizationId) return null;
    return configuration;
  }

  private async load(id: number): Promise<TelephonyConfiguration | null> {
    const rows: Array<Record<string, unknown>> = await this.dataSource.query(`SELECT * FROM telephony_configurations WHERE id = $1`, [id]);
    return rows.length ? configurationFromRow(rows[0]) : null;
  }
}
