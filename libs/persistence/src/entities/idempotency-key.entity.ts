import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * One `Idempotency-Key` of an organization, kept 24 h. While `runId` is null
 * the first request is still in flight (or died: `lockedUntil` lets a later
 * request take over). Once a run exists, repeats replay its answer.
 */
@Entity({ name: 'idempotency_keys' })
@Index('idempotency_keys_expires_idx', ['expiresAt'])
export class IdempotencyKey {
  @PrimaryColumn({ name: 'organization_id', type: 'integer' })
  organizationId: number;

  @PrimaryColumn({ type: 'text' })
  key: string;

  /** SHA-256 of the endpoint and the canonical request body. */
  @Column({ name: 'request_hash', type: 'char', length: 64 })
  requestHash: string;

  @Column({ name: 'run_id', type: 'bigint', nullable: true })
  runId: number | null;

  @Column({ name: 'locked_until', type: 'timestamptz' })
  lockedUntil: Date;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;
}
