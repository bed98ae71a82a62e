import { Inject, Injectable } from '@nestjs/common';
import { ArtifactKind, DownloadTokens } from '@app/artifacts';
import { RecentMap } from '@app/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { WorkflowRun } from '@app/persistence';
import { RunView } from './run-view';

/** Run-record links remembered for reuse; a dashboard polling a few thousand runs stays within it. */
const RECORD_LINKS_KEPT = 10_000;
/** A run-record link may outlive DOWNLOAD_URL_TTL_SECONDS by at most this share of it (and 60 s). */
const RECORD_LINK_STEPS_PER_TTL = 60;

interface DownloadLink {
  url: string;
  expires_at: string;
}

/**
 * Shapes runs for the API and mints their download links.
 *
 * The links in a run record expire on a step of TTL/60 seconds (at most a
 * minute; at TTL 3600, the next whole minute), so a run read many times
 * within one step answers the same link and it is signed once, not on every
 * poll. A record's link thus lives between the TTL and the TTL plus one
 * step. Links minted on request (`POST .../downloads`) expire exactly when asked.
 */
@Injectable()
export class RunPresenter {
  private readonly recordLinks = new RecentMap<string, { expiresAt: number; link: DownloadLink }>(RECORD_LINKS_KEPT);

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
      transcript_url: run.transcriptKey ? this.recordLink(run.id, 'transcript').url : null,
      recording_url: run.recordingKey ? this.recordLink(run.id, 'recording').url : null,
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

  downloadUrl(runId: number, artifact: ArtifactKind, lifetimeSeconds = this.config.downloadUrlTtlSeconds): DownloadLink {
    return this.link(runId, artifact, Math.floor(Date.now() / 1000) + lifetimeSeconds);
  }

  /** The link a run record carries: reused while its expiry step lasts. */
  private recordLink(runId: number, artifact: ArtifactKind): DownloadLink {
    const ttl = this.config.downloadUrlTtlSeconds;
    const step = Math.max(1, Math.min(60, Math.floor(ttl / RECORD_LINK_STEPS_PER_TTL)));
    const expiresAt = Math.ceil((Math.floor(Date.now() / 1000) + ttl) / step) * step;
    const cacheKey = `${runId} ${artifact}`;
    const known = this.recordLinks.get(cacheKey);
    if (known?.expiresAt === expiresAt) return known.link;
    const link = this.link(runId, artifact, expiresAt);
    this.recordLinks.set(cacheKey, { expiresAt, link });
    return link;
  }

  private link(runId: number, artifact: ArtifactKind, expiresAt: number): DownloadLink {
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
