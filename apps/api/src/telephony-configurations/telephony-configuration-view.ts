import { ApiProperty } from '@nestjs/swagger';
import { TelephonyConfiguration } from '@app/persistence';
import { CursorPage } from '../paging/cursor-page';

/** A configuration as the API answers it: whether it has credentials, never the credentials. */
export class TelephonyConfigurationView {
  @ApiProperty({ type: 'integer' }) id: number;
  @ApiProperty() name: string;
  @ApiProperty({ example: 'sandbox' }) provider: string;
  @ApiProperty({ description: 'Credentials are stored encrypted and never returned' }) has_credentials: boolean;
  @ApiProperty({ type: [String] }) from_numbers: string[];
  @ApiProperty() is_default_outbound: boolean;
  @ApiProperty() calls_per_second: number;
  @ApiProperty({ type: 'integer' }) max_concurrent_calls: number;
  @ApiProperty({ type: 'integer' }) max_call_duration_seconds: number;
  @ApiProperty({ type: 'object', additionalProperties: true }) settings: Record<string, unknown>;
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;

  static from(row: TelephonyConfiguration): TelephonyConfigurationView {
    return {
      id: row.id,
      name: row.name,
      provider: row.provider,
      has_credentials: row.credentialsEncrypted !== null,
      from_numbers: row.fromNumbers,
      is_default_outbound: row.isDefaultOutbound,
      calls_per_second: row.callsPerSecond,
      max_concurrent_calls: row.maxConcurrentCalls,
      max_call_duration_seconds: row.maxCallDurationSeconds,
      settings: row.settings,
      created_at: row.createdAt.toISOString(),
      updated_at: row.updatedAt.toISOString(),
    };
  }
}

export class TelephonyConfigurationPage extends CursorPage {
  @ApiProperty({ type: [TelephonyConfigurationView] }) telephony_configurations: TelephonyConfigurationView[];
}
