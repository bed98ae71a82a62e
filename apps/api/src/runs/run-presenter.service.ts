import { Inject, Injectable } from '@nestjs/common';
import { ArtifactKind, DownloadTokens } from '@app/artifacts';
import { RecentMap } from '@app/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { RunDocumentField, RunRecordRow, RunSummaryRow } from './run-records.service';

/** Run-record links remembered for reuse; a dashboard polling a few thousand runs stays within it. */
const RECORD_LINKS_KEPT = 10_000;
/** A run-record link may outlive DOWNLOAD_URL_TTL_SECONDS by at most this share of it (and 60 s). */
const RECORD_LINK_STEPS_PER_TTL = 60;

interface DownloadLink {
  url: string;
  expires_at: string;
}

/**
 * Writes run records for the API (as JSON text, see `recordJson`) and mints
 * their download links.
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

  /**
   * The run record as JSON text, its fields in RunView's order. The JSON
   * columns are spliced in as Postgres wrote them (valid JSON, its own
   * spacing); everything else is written by JSON.stringify.
   */
  recordJson(run: RunRecordRow): string {
    return this.json(run, run);
  }

  /** A run as the list shows it: the record without `initial_context`, `gathered_context`, `logs` and `annotations`. */
  summaryJson(run: RunSummaryRow): string {
    return this.json(run, null);
  }

  private json(run: RunSummaryRow, documents: Pick<RunRecordRow, RunDocumentField> | null): string {
    const text = JSON.stringify;
    const transcriptUrl = run.has_transcript ? this.recordLink(run.id, 'transcript').url : null;
    const recordingUrl = run.has_recording ? this.recordLink(run.id, 'recording').url : null;
    const costInfo = { call_duration_seconds: run.duration_seconds ?? 0, ...run.cost_info };
    return (
      `{"id":${text(run.id)},"workflow_id":${text(run.workflow_id)},"name":${text(run.name)},` +
      `"mode":${text(run.provider ?? 'sandbox')},"created_at":${text(run.created_at)},` +
      `"is_completed":${text(run.is_completed)},"transcript_url":${text(transcriptUrl)},` +
      `"recording_url":${text(recordingUrl)},"cost_info":${text(costInfo)},` +
      `"definition_id":${text(run.definition_id)},"call_type":${text(run.call_type)},` +
      (documents
        ? `"initial_context":${documents.initial_context},"gathered_context":${documents.gathered_context},` +
          `"logs":${documents.logs},"annotations":${documents.annotations},`
        : '') +
      `"status":${text(run.status)},"environment":${text(run.environment)},` +
      `"phone_number":${text(run.phone_number)},"from_number":${text(run.from_number)},` +
      `"telephony_configuration_id":${text(run.telephony_configuration_id)},` +
      `"provider_call_id":${text(run.provider_call_id)},"duration_seconds":${text(run.duration_seconds)},` +
      `"answered_at":${text(run.answered_at)},"ended_at":${text(run.ended_at)},` +
      `"end_reason":${text(run.end_reason)},"trigger_uuid":${text(run.trigger_uuid)},` +
      `"updated_at":${text(run.updated_at)}}`
    );
  }

  /**
   * A page of the run list as JSON (`{"runs": [...], "next_cursor": ...}`),
   * written straight into one buffer. As one string, a page of records (50
   * full ones were some 150 KiB) lands in V8's large-object space, which only a
   * full collection frees: under list polling that raised the API's peak RSS
   * by 25–30 MiB. A buffer's memory is freed with its handle.
   */
  pageJson(runs: RunSummaryRow[], nextCursor: string | null): Buffer {
    const parts = ['{"runs":['];
    runs.forEach((run, index) => {
      if (index > 0) parts.push(',');
      parts.push(this.summaryJson(run));
    });
    parts.push(`],"next_cursor":${JSON.stringify(nextCursor)}}`);
    const body = Buffer.allocUnsafe(parts.reduce((size, part) => size + Buffer.byteLength(part), 0));
    parts.reduce((offset, part) => offset + body.write(part, offset), 0);
    return body;
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
