import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { APP_CONFIG, AppConfig } from '@app/config';
import { ApiKey } from '@app/persistence';
import { hashApiKey } from './api-key-secret';
import { AuthenticatedKey } from './authenticated-key';

interface CacheEntry {
  key: AuthenticatedKey | null;
  expiresAt: number;
}

const CACHE_LIMIT = 10_000;

/**
 * Resolves a presented key to its organization and role. Lookups (hits and
 * misses) are kept in memory for at most API_KEY_CACHE_TTL_MS (≤ 5 s), which
 * bounds how long a revoked key keeps working on any replica.
 */
@Injectable()
export class ApiKeyAuthenticator {
  private readonly cache = new Map<string, CacheEntry>();

  constructor(
    private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async authenticate(presented: string): Promise<AuthenticatedKey | null> {
    const hash = hashApiKey(presented);
    const now = Date.now();
    const cached = this.cache.get(hash);
    if (cached && cached.expiresAt > now) return cached.key;

    const row = await this.dataSource.getRepository(ApiKey).findOneBy({ keyHash: hash });
    const key: AuthenticatedKey | null =
      row && row.revokedAt === null
        ? { id: row.id, organizationId: row.organizationId, role: row.role, workflowIds: row.workflowIds }
        : null;
    if (this.config.apiKeyCacheTtlMs > 0) {
      if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
      this.cache.set(hash, { key, expiresAt: now + this.config.apiKeyCacheTtlMs });
    }
    return key;
  }

  /** Drops this replica's cached lookups at once (other replicas expire theirs within the TTL). */
  forget(keyHash: string): void {
    this.cache.delete(keyHash);
  }
}
