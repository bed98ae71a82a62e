import { TelephonyConfiguration } from './entities/telephony-configuration.entity';

/**
 * Maps a `telephony_configurations` row (snake_case columns, as raw SQL or
 * `to_jsonb` gives it) to the entity, for the hot paths that read one
 * without the ORM.
 */
export function configurationFromRow(row: Record<string, unknown>): TelephonyConfiguration {
  return Object.assign(new TelephonyConfiguration(), {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    provider: row.provider,
    credentialsEncrypted: row.credentials_encrypted,
    fromNumbers: row.from_numbers,
    isDefaultOutbound: row.is_default_outbound,
    callsPerSecond: row.calls_per_second,
    maxConcurrentCalls: row.max_concurrent_calls,
    maxCallDurationSeconds: row.max_call_duration_seconds,
    settings: row.settings,
    createdAt: new Date(row.created_at as string),
    updatedAt: new Date(row.updated_at as string),
  });
}
