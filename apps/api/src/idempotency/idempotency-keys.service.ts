import { hash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DomainError, Errors } from '@app/common';
import { preparedQuery, RunIdempotency } from '@app/persistence';
import { AuthenticatedKey, keyMayUseEveryWorkflow, keyMayUseWorkflow } from '../auth/authenticated-key';
import { canonicalJson } from './canonical-json';

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/**
 * `Idempotency-Key` for the trigger endpoints, per organization. A first
 * request's key is claimed by the very statement that stores its run
 * (`WorkflowRunStore.insertQueued`), so key and run are committed together;
 * a request whose key is already held is told here what the key holds: the
 * same request's run to replay, or a 422 when the key came with another body.
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
    return hash('sha256', `${endpoint}\n${canonicalJson(body)}`, 'hex');
  }

  /**
   * The run an earlier request with this key and the same body started, to
   * be answered again; null when the key holds nothing (never used, or
   * expired). Throws 422 when the key came with another body, and 409 while
   * the key is held without a run (claimed by a gateway of an earlier
   * version, which claimed a key before storing its run, for at most 30 s).
   * `formerHash`, when given, is the same request's hash as an earlier
   * version wrote it, which a key claimed then still holds.
   *
   * Keys are the organization's, but what a key holds is told only to an API
   * key that may use the agent its run belongs to: one limited to other
   * agents gets 403 whatever the body, so it cannot learn by trying bodies
   * what another integration sent. (That the key is taken shows all the same.)
   */
  async earlierRun(
    caller: AuthenticatedKey,
    { key, requestHash }: RunIdempotency,
    formerHash?: () => string,
  ): Promise<number | null> {
    const [existing] = await preparedQuery<{ request_hash: string; run_id: number | null; workflow_id: number | null }>(
      this.dataSource,
      `SELECT k.request_hash, k.run_id, r.workflow_id
         FROM idempotency_keys k LEFT JOIN workflow_runs r ON r.id = k.run_id AND r.organization_id = k.organization_id
        WHERE k.organization_id = $1 AND k.key = $2 AND k.expires_at >= now()`,
      [caller.organizationId, key],
    );
    if (!existing) return null;
    if (!keyMayUseEveryWorkflow(caller)) {
      // Held without a run, its agent is not known yet: look again shortly.
      if (existing.run_id === null) throw inFlight();
      if (existing.workflow_id === null || !keyMayUseWorkflow(caller, existing.workflow_id)) {
        throw Errors.forbidden('This Idempotency-Key holds a request to an agent this API key has no access to');
      }
    }
    if (existing.request_hash !== requestHash && existing.request_hash !== formerHash?.()) {
      throw new DomainError(422, 'idempotency_key_reused', 'This Idempotency-Key was used with a different request body');
    }
    if (existing.run_id === null) throw inFlight();
    return existing.run_id;
  }

  /**
   * `earlierRun`, for a request refused before it could claim its key (its
   * trigger deactivated, its configuration deleted, since a first request
   * with the key passed the same checks). That first request may be storing
   * its run at this moment: its claim, not committed yet, is not seen, and
   * the refusal would tell a retrying client that no call was placed while
   * the first request's is. Seeing nothing, it tries to claim the key itself,
   * which waits for a claim under way, then rolls its own back; when the key
   * turned out to be taken, it is read again.
   */
  async earlierRunOnceSettled(caller: AuthenticatedKey, idempotency: RunIdempotency, formerHash?: () => string): Promise<number | null> {
    const earlier = await this.earlierRun(caller, idempotency, formerHash);
    if (earlier !== null || !(await this.claimWasUnderWay(caller.organizationId, idempotency.key))) return earlier;
    return this.earlierRun(caller, idempotency, formerHash);
  }

  private async claimWasUnderWay(organizationId: number, key: string): Promise<boolean> {
    const runner = this.dataSource.createQueryRunner();
    await runner.connect();
    try {
      await runner.startTransaction();
      const claimed: unknown[] = await runner.query(
        `INSERT INTO idempotency_keys (organization_id, key, request_hash, run_id, locked_until, expires_at)
         VALUES ($1, $2, repeat('0', 64), NULL, now(), now())
         ON CONFLICT DO NOTHING RETURNING 1`,
        [organizationId, key],
      );
      return claimed.length === 0;
    } finally {
      await runner.rollbackTransaction().catch(() => undefined);
      await runner.release();
    }
  }
}

function inFlight(): DomainError {
  return Errors.conflict('idempotency_request_in_flight', 'A request with this Idempotency-Key is still being processed');
}
