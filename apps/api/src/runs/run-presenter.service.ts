import { Inject, Injectable } from '@nestjs/common';
import { ArtifactKind, DownloadTokens } from '@app/artifacts';
import { APP_CONFIG, AppConfig } from '@app/config';
import { WorkflowRun } from '@app/persistence';
import { RunView } from './run-view';

/** Shapes runs for the API and mints their download links. */
@Injectable()
export class RunPresenter {
  constructor(
    private readonly tokens: DownloadTokens,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  present(run: WorkflowRun): RunView {
    return {
      id: run.id,
      workflow_id: run.workflowId,
      name: run.name,
      mode: run.provider ?? 'sandbox',
      created_at: run.createdAt.toISOString(),
      is_completed: run.isCompleted,
      transcript_url: run.transcriptKey ? this.downloadUrl(run.id, 'transcript').url : null,
      recording_url: run.recordingKey ? this.downloadUrl(run.id, 'recording').url : null,
      cost_info: { call_duration_seconds: run.durationSeconds ?? 0, ...run.costInfo },
      definition_id: run.definitionId,
      call_type: run.callType,
      initial_context: run.initialContext,
      gathered_context: run.gatheredContext,
      logs: run.logs,
      annotations: run.annotations,
      status: run.status,
      environment: run.environment,
      phone_number: run.phoneNumber,
      from_number: run.fromNumber,
      telephony_configuration_id: run.telephonyConfigurationId,
      provider_call_id: run.providerCallId,
      duration_seconds: run.durationSeconds,
      answered_at: run.answeredAt?.toISOString() ?? null,
      ended_at: run.endedAt?.toISOString() ?? null,
      end_reason: run.endReason,
      trigger_uuid: run.triggerUuid,
      updated_at: run.updatedAt.toISOString(),
    };
  }

  downloadUrl(runId: number, artifact: ArtifactKind, lifetimeSeconds = this.config.downloadUrlTtlSeconds) {
    const expiresAt = Math.floor(Date.now() / 1000) + lifetimeSeconds;
    const token = this.tokens.sign({ runId, artifact, expiresAt });
    // Fastify caps a path parameter at 100 characters, which a token for a large run id exceeds (a 414):
    // its payload and signature travel as two segments.
    const [payload, signature] = token.split('.');
    return {
      url: `${this.config.publicBaseUrl}/api/v1/downloads/${payload}/${signature}`,
      expires_at: new Date(expiresAt * 1000).toISOString(),
    };
  }
}
