import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

/** A carrier account of an organization. Credentials are stored encrypted, never returned. */
@Entity({ name: 'telephony_configurations' })
@Index('telephony_configurations_organization_idx', ['organizationId'])
@Index('telephony_configurations_one_default', ['organizationId'], {
  unique: true,
  where: 'is_default_outbound',
})
export class TelephonyConfiguration {
  @PrimaryGeneratedColumn()
  id: number;

  @Column({ name: 'organization_id', type: 'integer' })
  organizationId: number;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  provider: string;

  /** AES-256-GCM envelope of the credentials JSON, or null for providers without any. */
  @Column({ name: 'credentials_encrypted', type: 'text', nullable: true })
  credentialsEncrypted: string | null;

  @Column({ name: 'from_numbers', type: 'text', array: true, default: () => `'{}'` })
  fromNumbers: string[];

  @Column({ name: 'is_default_outbound', type: 'boolean', default: false })
  isDefaultOutbound: boolean;

  @Column({ name: 'calls_per_second', type: 'double precision', default: 1 })
  callsPerSecond: number;

  @Column({ name: 'max_concurrent_calls', type: 'integer', default: 10 })
  maxConcurrentCalls: number;

  @Column({ name: 'max_call_duration_seconds', type: 'integer', default: 3600 })
  maxCallDurationSeconds: number;

  @Column({ type: 'jsonb', default: () => `'{}'` })
  settings: Record<string, unknown>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
