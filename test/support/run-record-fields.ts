/**
 * The spec's run record, plus the call fields the service adds, in the
 * order a record is written. Nothing else may leak (keys, org ids ...).
 */
export const RUN_RECORD_FIELDS: readonly string[] = [
  'id',
  'workflow_id',
  'name',
  'mode',
  'created_at',
  'is_completed',
  'transcript_url',
  'recording_url',
  'cost_info',
  'definition_id',
  'call_type',
  'initial_context',
  'gathered_context',
  'logs',
  'annotations',
  'status',
  'environment',
  'phone_number',
  'from_number',
  'telephony_configuration_id',
  'provider_call_id',
  'duration_seconds',
  'answered_at',
  'ended_at',
  'end_reason',
  'trigger_uuid',
  'updated_at',
];
