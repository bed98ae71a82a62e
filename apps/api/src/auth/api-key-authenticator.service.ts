import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { FoundOrMissingCache } from '@app/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { ApiKeyRole } from '@app/persistence';
import { hashApiKey } from './api-key-secret';
import { AuthenticatedKey } from './authenticated-key';

/** The shortest a check stays good for a request still arriving (`checkLifetimeMs`). */
const MIN_CHECK_LIFETIME_MS = 1_000;

/** When a request's key was checked, to tell later whether that check may still be trusted (`checkStillGood`). */
export interface ApiKeyCheck {
  /** When the answer was read from Postgres (`performance.now()`): a cached one may be older than the request. */
  at: number;
  /** How many keys this replica had revoked before the check: one revoked since may be this one. */
  revocations: number;
}

/** A lookup's answer and when it was read from Postgres. */
interface KeyLookup {
  key: AuthenticatedKey | null;
  readAt: number;
}

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
  private readonly keys: FoundOrMissingCache<string, KeyLookup>;
  /** Keys this replica has revoked so far (`forget`): a check made before the last one may be of a revoked key. */
  private forgotten = 0;
  /**
   * How long a check stays good for a request that is still arriving (its
   * body read after its head was checked): as long as a cached lookup, and
   * a second at least.
   */
  readonly checkLifetimeMs: number;

  constructor(
    private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.keys = new FoundOrMissingCache(config.apiKeyCacheTtlMs, (lookup) => lookup.key !== null);
    // A second at least: with no cache (a TTL of 0), every trigger's body would otherwise have its key looked up
    // again in Postgres after its head, one query more on the busiest route.
    this.checkLifetimeMs = Math.max(config.apiKeyCacheTtlMs, MIN_CHECK_LIFETIME_MS);
  }

  /**
   * Whether a key checked at `check` may be trusted without checking it
   * again: no key was revoked on this replica since, and the answer it
   * rests on was read from Postgres no longer ago than a cached lookup may
   * be (a key revoked on another replica is not trusted longer than there:
   * a request whose head was checked from a lookup cached almost a lifetime
   * before has its key checked again when its body has arrived).
   */
  checkStillGood(check: ApiKeyCheck): boolean {
    return check.revocations === this.forgotten && performance.now() - check.at <= this.checkLifetimeMs;
  }

  /** The presented key's organization and role (`null`: unknown or revoked), with the check to keep beside them. */
  async check(presented: string): Promise<{ key: AuthenticatedKey | null; check: ApiKeyCheck }> {
    const revocations = this.forgotten;
    const hash = hashApiKey(presented);
    const { key, readAt } = await this.keys.get(hash, () => this.load(hash));
    return { key, check: { at: readAt, revocations } };
  }

  /** Drops this replica's cached lookups at once (other replicas expire theirs within the TTL). */
  forget(keyHash: string): void {
    this.forgotten += 1;
    this.keys.forget((hash) => hash === keyHash);
  }

  private async load(hash: string): Promise<KeyLookup> {
    // Read before the query is sent: a revocation that commits while it runs may be missed by it.
    const readAt = performance.now();
    const [row]: Array<{ id: number; organization_id: number; role: ApiKeyRole; workflow_ids: number[] | null }> =
      await this.dataSource.query(
        `SELECT id, organization_id, role, workflow_ids FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`,
        [hash],
      );
    const key = row ? { id: row.id, organizationId: row.organization_id, role: row.role, workflowIds: row.workflow_ids } : null;
    return { key, readAt };
  }
}
