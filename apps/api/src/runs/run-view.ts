import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { CursorPage } from '../paging/cursor-page';

const ARTIFACT_LINK =
  'Null until stored. A signed link that needs no API key and expires DOWNLOAD_URL_TTL_SECONDS (1 h by default) ' +
  'after this answer: read the run again for a fresh one rather than keeping it.';

/** A run as the list shows it: the run record without its free-form documents. */
export class RunSummary {
  @ApiProperty({ type: 'integer' }) id: number;
  @ApiProperty({ type: 'integer' }) workflow_id: number;
  @ApiProperty({ example: 'WR-API-42' }) name: string;
  @ApiProperty({ description: 'Provider of the telephony configuration used', example: 'sandbox' }) mode: string;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({
    description:
      "True once the run is final and its artifacts are collected. A recording that comes late (the carrier's, or the agent " +
      "runtime's upload still arriving when the run was finished) can still be attached afterwards: recording_url then appears",
  })
  is_completed: boolean;
  @ApiProperty({ type: String, nullable: true, description: ARTIFACT_LINK }) transcript_url: string | null;
  @ApiProperty({ type: String, nullable: true, description: ARTIFACT_LINK }) recording_url: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true }) cost_info: Record<string, unknown>;
  @ApiProperty({ type: 'integer', nullable: true }) definition_id: number | null;
  @ApiProperty({ enum: ['inbound', 'outbound'] }) call_type: 'inbound' | 'outbound';
  @ApiProperty({
    enum: ['queued', 'dialing', 'ringing', 'in_progress', 'completed', 'busy', 'no_answer', 'failed', 'canceled'],
  })
  status: string;
  @ApiProperty({ enum: ['production', 'test'] }) environment: string;
  @ApiProperty() phone_number: string;
  @ApiProperty({ type: String, nullable: true }) from_number: string | null;
  @ApiProperty({ type: 'integer', nullable: true }) telephony_configuration_id: number | null;
  @ApiProperty({ type: String, nullable: true }) provider_call_id: string | null;
  @ApiProperty({ type: Number, nullable: true }) duration_seconds: number | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) answered_at: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) ended_at: string | null;
  @ApiProperty({ type: String, nullable: true }) end_reason: string | null;
  @ApiProperty({ type: String, nullable: true }) trigger_uuid: string | null;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

/** A run as the API answers it: the spec's run record plus the call's own fields. */
export class RunView extends RunSummary {
  @ApiPropertyOptional({ type: 'object', additionalProperties: true }) initial_context: Record<string, unknown>;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true }) gathered_context: Record<string, unknown>;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true }) logs: Record<string, unknown>;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true }) annotations: Record<string, unknown>;
}

export class RunPage extends CursorPage {
  @ApiProperty({
    type: [RunSummary],
    description: 'Summaries: read a run for its initial_context, gathered_context, logs and annotations',
  })
  runs: RunSummary[];
}
