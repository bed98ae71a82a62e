import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ExpiringCache } from '@app/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { ApiKeyRole } from '@app/persistence';
import { hashApiKey } from './api-key-secret';
import { AuthenticatedKey } from './authenticated-key';

/** Unknown keys remembered at once; the organizations' own keys have a cache of their own (10,000). */
const UNKNOWN_KEYS_KEPT = 1_000;

/**
 * Resolves a presented key to its organization and role. Lookups are kept
 * in memory for at most API_KEY_CACHE_TTL_MS (≤ 5 s), which bounds how long
 * a revoked key keeps working on any replica. Keys that exist and keys that
 * do not are kept apart: in one cache, a stream of made-up keys (each one
 * kept as a miss) pushed the real keys out, and every request of a real
 * client went to Postgres.
 */
@Injectable()
export class ApiKeyAuthenticator {
  private readonly known: ExpiringCache<string, AuthenticatedKey | null>;
  private readonly unknown: ExpiringCache<string, AuthenticatedKey | null>;

  constructor(
    private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.known = new ExpiringCache(config.apiKeyCacheTtlMs);
    this.unknown = new ExpiringCache(config.apiKeyCacheTtlMs, UNKNOWN_KEYS_KEPT);
  }

  authenticate(presented: string): Promise<AuthenticatedKey | null> {
    const hash = hashApiKey(presented);
    return this.known.get(hash, () => this.unknown.get(hash, () => this.load(hash), isMissing), isFound);
  }

  /** Drops this replica's cached lookups at once (other replicas expire theirs within the TTL). */
  forget(keyHash: string): void {
    this.known.forget((hash) => hash === keyHash);
    this.unknown.forget((hash) => hash === keyHash);
  }

  private async load(hash: string): Promise<AuthenticatedKey | null> {
    const [row]: Array<{ id: number; organization_id: number; role: ApiKeyRole; workflow_ids: number[] | null }> =
      await this.dataSource.query(
        `SELECT id, organization_id, role, workflow_ids FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`,
        [hash],
      );
    return row ? { id: row.id, organizationId: row.organization_id, role: row.role, workflowIds: row.workflow_ids } : null;
  }
}

const isFound = (key: AuthenticatedKey | null) => key !== null;
const isMissing = (key: AuthenticatedKey | null) => key === null;
