import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import { RunEnvironment, RunStatus } from '../run-status';

export interface RunLogEvent {
  at: string;
  event: string;
  status?: RunStatus;
  detail?: Record<string, unknown>;
}

export interface RunLogs {
  events?: RunLogEvent[];
  template_missing_paths?: string[];
  [key: string]: unknown;
}

/**
 * The record of one call. `initialContext` is exactly what the caller sent;
 * everything the system knows about the run lives in its own columns.
 */
@Entity({ name: 'workflow_runs' })
@Index('workflow_runs_workflow_idx', ['workflowId', 'id'])
@Index('workflow_runs_workflow_status_idx', ['workflowId', 'status', 'id'])
@Index('workflow_runs_open_idx', ['status', 'statusChangedAt'], { where: 'NOT is_completed' })
export class WorkflowRun {
  /**
   * `bigint`, read as a number (see `createDataSource`): ids stay far below
   * 2^53. Declared as `int8`, its alias: TypeORM turns a generated id of a
   * column declared `bigint` into a string after `save`.
   */
  @PrimaryGeneratedColumn({ type: 'int8' })
  id: number;

  @Column({ name: 'organization_id', type: 'integer' })
  organizationId: number;

  @Column({ name: 'workflow_id', type: 'integer' })
  workflowId: number;

  @Column({ type: 'text' })
  name: string;

  @Column({ type: 'text' })
  status: RunStatus;

  @Column({ type: 'text' })
  environment: RunEnvironment;

  @Column({ name: 'call_type', type: 'text', default: 'outbound' })
  callType: 'inbound' | 'outbound';

  @Column({ name: 'trigger_uuid', type: 'uuid', nullable: true })
  triggerUuid: string | null;

  @Column({ name: 'api_key_id', type: 'integer', nullable: true })
  apiKeyId: number | null;

  @Column({ name: 'telephony_configuration_id', type: 'integer', nullable: true })
  telephonyConfigurationId: number | null;

  /** The carrier the run went through; answered as the run's `mode`. */
  @Column({ type: 'text', nullable: true })
  provider: string | null;

  @Column({ name: 'definition_id', type: 'integer', nullable: true })
  definitionId: number | null;

  @Column({ name: 'phone_number', type: 'text' })
  phoneNumber: string;

  @Column({ name: 'from_number', type: 'text', nullable: true })
  fromNumber: string | null;

  @Column({ name: 'provider_call_id', type: 'text', nullable: true })
  providerCallId: string | null;

  @Column({ name: 'initial_context', type: 'jsonb', default: () => `'{}'` })
  initialContext: Record<string, unknown>;

  @Column({ name: 'gathered_context', type: 'jsonb', default: () => `'{}'` })
  gatheredContext: Record<string, unknown>;

  @Column({ type: 'jsonb', default: () => `'{}'` })
  logs: RunLogs;

  @Column({ type: 'jsonb', default: () => `'{}'` })
  annotations: Record<string, unknown>;

  @Column({ name: 'cost_info', type: 'jsonb', default: () => `'{}'` })
  costInfo: Record<string, unknown>;

  @Column({ name: 'duration_seconds', type: 'double precision', nullable: true })
  durationSeconds: number | null;

  @Column({ name: 'answered_at', type: 'timestamptz', nullable: true })
  answeredAt: Date | null;

  @Column({ name: 'ended_at', type: 'timestamptz', nullable: true })
  endedAt: Date | null;

  @Column({ name: 'end_reason', type: 'text', nullable: true })
  endReason: string | null;

  /** True only once the run is final and its artifacts are collected (a recording that comes late is still stored after). */
  @Column({ name: 'is_completed', type: 'boolean', default: false })
  isCompleted: boolean;

  /** Turns the voice-agent runtime reported, in order; stored as the transcript artifact at the end. */
  @Column({ name: 'agent_transcript', type: 'jsonb', default: () => `'[]'` })
  agentTranscript: Array<Record<string, unknown>>;

  /** The longest the call may last, as its dial told the carrier (null on runs dialed before this was kept). */
  @Column({ name: 'max_call_duration_seconds', type: 'integer', nullable: true })
  maxCallDurationSeconds: number | null;

  /** When a session token was handed out for the call: an agent runtime is expected to report. */
  @Column({ name: 'agent_session_started_at', type: 'timestamptz', nullable: true })
  agentSessionStartedAt: Date | null;

  /** When the agent runtime said its session is over (its last turns are in). */
  @Column({ name: 'agent_session_ended_at', type: 'timestamptz', nullable: true })
  agentSessionEndedAt: Date | null;

  /**
   * When the agent runtime's recording upload was admitted on its head, while
   * the session was open: the dialer waits for it while its body may still
   * be arriving. Cleared when the runtime ends its session itself.
   */
  @Column({ name: 'recording_upload_admitted_at', type: 'timestamptz', nullable: true })
  recordingUploadAdmittedAt: Date | null;

  /** The carrier's recording, to be fetched into our storage (never handed out). */
  @Column({ name: 'carrier_recording_url', type: 'text', nullable: true })
  carrierRecordingUrl: string | null;

  @Column({ name: 'transcript_key', type: 'text', nullable: true })
  transcriptKey: string | null;

  @Column({ name: 'recording_key', type: 'text', nullable: true })
  recordingKey: string | null;

  /** When the status last moved; the reaper measures how long a run has been stuck from here. */
  @Column({ name: 'status_changed_at', type: 'timestamptz', default: () => 'now()' })
  statusChangedAt: Date;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
