import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Batcher, DomainError, Errors } from '@app/common';
import { preparedQuery } from '@app/persistence';
import { canonicalJson } from './canonical-json';

/** Keys are kept this long (as Stripe does), then a repeat starts afresh. */
const RETENTION = '24 hours';
/** A first request that holds a key longer than this is presumed dead; a repeat may take over. */
const LOCK = '30 seconds';
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export type IdempotencyClaim = { kind: 'claimed' } | { kind: 'replay'; runId: number };

interface KeyClaim {
  organizationId: number;
  key: string;
  fingerprint: string;
}

/**
 * Claims a group's keys: new ones, expired ones, and ones whose first request
 * died holding them with the same body. Answers the keys it claimed; the
 * others stay as they are, to be told apart one by one.
 */
const CLAIM_KEYS = `
  INSERT INTO idempotency_keys (organization_id, key, request_hash, run_id, locked_until, expires_at)
  SELECT organization_id, key, request_hash, NULL, now() + interval '${LOCK}', now() + interval '${RETENTION}'
    FROM unnest($1::integer[], $2::text[], $3::text[]) AS input (organization_id, key, request_hash)
  ON CONFLICT (organization_id, key) DO UPDATE
     SET request_hash = EXCLUDED.request_hash, run_id = NULL, created_at = now(),
         locked_until = EXCLUDED.locked_until, expires_at = EXCLUDED.expires_at
   WHERE idempotency_keys.expires_at < now()
      OR (idempotency_keys.run_id IS NULL AND idempotency_keys.locked_until < now()
          AND idempotency_keys.request_hash = EXCLUDED.request_hash)
  RETURNING organization_id, key`;

/**
 * `Idempotency-Key` for the trigger endpoints, per organization: the first
 * request claims the key; its run id is recorded in the same transaction that
 * stores the run, so a repeat replays the same run and never starts a second
 * call. The same key with another body is a 422; a repeat while the first is
 * in flight a 409.
 */
@Injectable()
export class IdempotencyKeys {
  /**
   * Concurrent first requests claim their keys in one statement, as their
   * runs are stored in one: a claim each cost Postgres a statement and a
   * commit of its own (see README "Performance").
   */
  private readonly claims = new Batcher<KeyClaim, boolean>((group) => this.claimGroup(group), { maxBatch: 200, maxInFlight: 2 });

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
    if (await this.claims.submit({ organizationId, key, fingerprint })) return { kind: 'claimed' };

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

  /**
   * One statement for the group. A key that comes twice in it (two requests
   * racing with it) is sent once, for the first of them: Postgres refuses a
   * statement that would update one row twice, and the second request then
   * finds the key held, as it would have one statement later.
   */
  private async claimGroup(group: KeyClaim[]): Promise<boolean[]> {
    const firstOf = new Map<string, KeyClaim>();
    for (const claim of group) {
      const id = keyId(claim.organizationId, claim.key);
      if (!firstOf.has(id)) firstOf.set(id, claim);
    }
    const sent = [...firstOf.values()];
    const claimed: Array<{ organization_id: number; key: string }> = await preparedQuery(this.dataSource, CLAIM_KEYS, [
      sent.map((claim) => claim.organizationId),
      sent.map((claim) => claim.key),
      sent.map((claim) => claim.fingerprint),
    ]);
    const won = new Set(claimed.map((row) => keyId(row.organization_id, row.key)));
    return group.map((claim) => {
      const id = keyId(claim.organizationId, claim.key);
      return firstOf.get(id) === claim && won.has(id);
    });
  }

  /** Frees a key whose request failed before storing a run, so a retry is processed afresh. */
  async release(organizationId: number, key: string): Promise<void> {
    await this.dataSource.query(`DELETE FROM idempotency_keys WHERE organization_id = $1 AND key = $2 AND run_id IS NULL`, [
      organizationId,
      key,
    ]);
  }
}

/** Keys are visible ASCII (KEY_PATTERN), so a space cannot be part of one. */
function keyId(organizationId: number, key: string): string {
  return `${organizationId} ${key}`;
}
