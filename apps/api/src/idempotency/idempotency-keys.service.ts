import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { DomainError, Errors } from '@app/common';
import { canonicalJson } from './canonical-json';

/** Keys are kept this long (as Stripe does), then a repeat starts afresh. */
const RETENTION = '24 hours';
/** A first request that holds a key longer than this is presumed dead; a repeat may take over. */
const LOCK = '30 seconds';
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export type IdempotencyClaim = { kind: 'claimed' } | { kind: 'replay'; runId: number };

/**
 * `Idempotency-Key` for the trigger endpoints, per organization: the first
 * request claims the key; its run id is recorded in the same transaction that
 * stores the run, so a repeat replays the same run and never starts a second
 * call. The same key with another body is a 422; a repeat while the first is
 * in flight a 409.
 */
@Injectable()
export class IdempotencyKeys {
  constructor(private readonly dataSource: DataSource) {}

  static validate(key: string | string[] | undefined): string | null {
    if (key === undefined) return null;
    const value = Array.isArray(key) ? key[0] : key;
    if (!KEY_PATTERN.test(value)) {
      throw Errors.validation('Idempotency-Key must be 1 to 255 visible ASCII characters');
    }
    return value;
  }

  static fingerprint(endpoint: string, body: unknown): string {
    return createHash('sha256').update(`${endpoint}\n${canonicalJson(body)}`).digest('hex');
  }

  async claim(organizationId: number, key: string, fingerprint: string): Promise<IdempotencyClaim> {
    const taken: unknown[] = await this.dataSource.query(
      `INSERT INTO idempotency_keys (organization_id, key, request_hash, run_id, locked_until, expires_at)
       VALUES ($1, $2, $3, NULL, now() + interval '${LOCK}', now() + interval '${RETENTION}')
       ON CONFLICT (organization_id, key) DO UPDATE
          SET request_hash = EXCLUDED.request_hash, run_id = NULL, created_at = now(),
              locked_until = EXCLUDED.locked_until, expires_at = EXCLUDED.expires_at
        WHERE idempotency_keys.expires_at < now()
           OR (idempotency_keys.run_id IS NULL AND idempotency_keys.locked_until < now()
               AND idempotency_keys.request_hash = EXCLUDED.request_hash)
       RETURNING 1`,
      [organizationId, key, fingerprint],
    );
    if (taken.length > 0) return { kind: 'claimed' };

    const [existing]: Array<{ request_hash: string; run_id: number | null }> = await this.dataSource.query(
      `SELECT request_hash, run_id FROM idempotency_keys WHERE organization_id = $1 AND key = $2`,
      [organizationId, key],
    );
    // Gone between the two statements (expired and cleaned up): claim it again.
    if (!existing) return this.claim(organizationId, key, fingerprint);
    if (existing.request_hash !== fingerprint) {
      throw new DomainError(422, 'idempotency_key_reused', 'This Idempotency-Key was used with a different request body');
    }
    if (existing.run_id === null) {
      throw Errors.conflict('idempotency_request_in_flight', 'A request with this Idempotency-Key is still being processed');
    }
    return { kind: 'replay', runId: existing.run_id };
  }

  /** Records the run under the key, inside the transaction that stored the run. */
  async complete(manager: EntityManager, organizationId: number, key: string, runId: number): Promise<void> {
    await manager.query(`UPDATE idempotency_keys SET run_id = $3 WHERE organization_id = $1 AND key = $2`, [
      organizationId,
      key,
      runId,
    ]);
  }

  /** Frees a key whose request failed before storing a run, so a retry is processed afresh. */
  async release(organizationId: number, key: string): Promise<void> {
    await this.dataSource.query(`DELETE FROM idempotency_keys WHERE organization_id = $1 AND key = $2 AND run_id IS NULL`, [
      organizationId,
      key,
    ]);
  }
}
