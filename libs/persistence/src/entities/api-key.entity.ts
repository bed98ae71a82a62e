import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

export type ApiKeyRole = 'admin' | 'trigger';
export const API_KEY_ROLES: readonly ApiKeyRole[] = ['admin', 'trigger'];

/** Only the SHA-256 of a key is stored; `keyPrefix` lets people tell keys apart. */
@Entity({ name: 'api_keys' })
@Index('api_keys_organization_idx', ['organizationId'])
export class ApiKey {
  @PrimaryGeneratedColumn()
  id: number;

  @Column({ name: 'organization_id', type: 'integer' })
  organizationId: number;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  role: ApiKeyRole;

  @Index('api_keys_key_hash_key', { unique: true })
  @Column({ name: 'key_hash', type: 'char', length: 64 })
  keyHash: string;

  @Column({ name: 'key_prefix', type: 'text' })
  keyPrefix: string;

  /** When set, a `trigger` key may only reach these workflows. */
  @Column({ name: 'workflow_ids', type: 'integer', array: true, nullable: true })
  workflowIds: number[] | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
