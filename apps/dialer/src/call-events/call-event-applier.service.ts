import { Injectable, Logger } from '@nestjs/common';
import { isFinalRunStatus, RunStatus, RunTransitionFields, WorkflowRunStore } from '@app/persistence';
import { CallEventJob, CallEventType } from '@app/queue';
import { ConcurrencyLimiter } from '../pacing/concurrency-limiter';
import { RunArtifactsCollector } from './run-artifacts-collector.service';

const STATUS_BY_EVENT: Record<CallEventType, RunStatus> = {
  ringing: 'ringing',
  answered: 'in_progress',
  completed: 'completed',
  busy: 'busy',
  no_answer: 'no_answer',
  failed: 'failed',
  canceled: 'canceled',
};

/**
 * Applies carrier status events to runs, for every provider alike. Each is a
 * conditional forward move, so a duplicate, late or out-of-order event
 * changes nothing once the run has moved past it.
 */
@Injectable()
export class CallEventApplier {
  private readonly logger = new Logger(CallEventApplier.name);

  constructor(
    private readonly runs: WorkflowRunStore,
    private readonly artifacts: RunArtifactsCollector,
    private readonly slots: ConcurrencyLimiter,
  ) {}

  async apply(event: CallEventJob): Promise<boolean> {
    const to = STATUS_BY_EVENT[event.type];
    const occurredAt = new Date(event.occurredAt);
    const fields: RunTransitionFields = { providerCallId: event.providerCallId };
    if (event.type === 'answered') fields.answeredAt = occurredAt;
    if (to !== 'ringing' && to !== 'in_progress') {
      fields.endedAt = occurredAt;
      fields.endReason = event.type === 'failed' ? (event.reason ?? 'carrier_failed') : event.type;
    }
    if (event.type === 'completed') {
      const duration = Math.max(0, event.durationSeconds ?? 0);
      fields.durationSeconds = duration;
      fields.costInfo = { call_duration_seconds: duration };
    }
    const moved = await this.runs.transition(event.runId, to, `carrier.${event.type}`, fields, {
      provider: event.provider,
      provider_call_id: event.providerCallId,
      ...(event.reason ? { reason: event.reason } : {}),
    });
    if (!moved) {
      this.logger.debug({ run_id: event.runId, event: event.type }, 'carrier event changed nothing');
    } else if (isFinalRunStatus(to) && moved.telephonyConfigurationId !== null) {
      await this.slots.release(moved.telephonyConfigurationId, event.runId);
    }
    // Also after a lost race or a retry: finishing the artifacts is idempotent.
    if (event.type === 'completed') await this.artifacts.collect(event.runId);
    return moved !== null;
  }
}
