import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { FoundOrMissingCache } from '@app/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { ApiKeyRole } from '@app/persistence';
import { hashApiKey } from './api-key-secret';
import { AuthenticatedKey } from './authenticated-key';

/**
 * Resolves a presented key to its organization and role. Lookups are kept
 * in memory for at most API_KEY_CACHE_TTL_MS (≤ 5 s), which bounds how long
 * a revoked key keeps working on any replica. Keys that exist and keys that
 * do not are kept apart (`FoundOrMissingCache`): in one cache, a stream of
 * made-up keys pushed the real keys out, and every request of a real client
 * went to Postgres.
 */
@Injectable()
export class ApiKeyAuthenticator {
  private readonly keys: FoundOrMissingCache<string, AuthenticatedKey | null>;

  constructor(
    private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.keys = new FoundOrMissingCache(config.apiKeyCacheTtlMs, (key) => key !== null);
  }

  authenticate(presented: string): Promise<AuthenticatedKey | null> {
    const hash = hashApiKey(presented);
    return this.keys.get(hash, () => this.load(hash));
  }

  /** Drops this replica's cached lookups at once (other replicas expire theirs within the TTL). */
  forget(keyHash: string): void {
    this.keys.forget((hash) => hash === keyHash);
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
