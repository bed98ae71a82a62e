import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * The sandbox carrier's own ledger: one row per dial request it accepted
 * (or refused after processing). It is what a real carrier's call log is:
 * the sandbox answers status look-ups from it, and tests count dials per run.
 */
@Entity({ name: 'sandbox_calls' })
@Index('sandbox_calls_run_idx', ['runId'])
export class SandboxCall {
  @PrimaryColumn({ name: 'call_id', type: 'text' })
  callId: string;

  @Column({ name: 'run_id', type: 'bigint' })
  runId: number;

  @Column({ name: 'to_number', type: 'text' })
  toNumber: string;

  /** answer, busy, no_answer, carrier_failure or reject_dial. */
  @Column({ type: 'text' })
  outcome: string;

  @Column({ name: 'ring_ms', type: 'integer' })
  ringMs: number;

  @Column({ name: 'talk_ms', type: 'integer' })
  talkMs: number;

  @Column({ name: 'canceled_at', type: 'timestamptz', nullable: true })
  canceledAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
