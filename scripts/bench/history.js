'use strict';
// A history of finished runs for the bench's workflow, as months of traffic
// would leave it: one INSERT ... SELECT over generate_series, then VACUUM
// ANALYZE, so the trigger and read scenarios can run again against a big table.

const { realisticContext } = require('./api-client');

/** What statuses finished runs end in, as cumulative shares. */
const OUTCOMES = [
  { status: 'completed', upTo: 0.78, endReason: 'completed' },
  { status: 'no_answer', upTo: 0.86, endReason: 'no_answer' },
  { status: 'busy', upTo: 0.92, endReason: 'busy' },
  { status: 'failed', upTo: 0.97, endReason: 'carrier_failure' },
  { status: 'canceled', upTo: 1, endReason: 'canceled' },
];
const HISTORY_DAYS = 30;

/** Stores `count` finished runs of `workflowId`, created over the last 30 days, oldest first. */
async function insertHistory(stack, workflowId, count, log) {
  const [owner] = await stack.query(
    `SELECT w.organization_id, t.uuid AS trigger_uuid, d.id AS definition_id,
            (SELECT id FROM telephony_configurations c WHERE c.organization_id = w.organization_id AND c.is_default_outbound) AS configuration_id,
            (SELECT id FROM api_keys k WHERE k.organization_id = w.organization_id ORDER BY id LIMIT 1) AS api_key_id,
            (SELECT from_numbers[1] FROM telephony_configurations c WHERE c.organization_id = w.organization_id AND c.is_default_outbound) AS from_number
       FROM workflows w
       JOIN api_triggers t ON t.workflow_id = w.id
       JOIN workflow_definitions d ON d.workflow_id = w.id AND d.status = 'published'
      WHERE w.id = $1`,
    [workflowId],
  );
  if (!owner) throw new Error(`workflow ${workflowId} has no trigger or published definition to build a history on`);
  const started = Date.now();
  await stack.query(HISTORY_SQL, [
    owner.organization_id,
    workflowId,
    owner.trigger_uuid,
    owner.api_key_id,
    owner.configuration_id,
    owner.definition_id,
    count,
    JSON.stringify(realisticContext()),
    owner.from_number,
    JSON.stringify(TRANSCRIPT),
  ]);
  log(`inserted ${count} finished runs in ${((Date.now() - started) / 1000).toFixed(1)} s; VACUUM ANALYZE, CHECKPOINT`);
  await stack.query('VACUUM ANALYZE workflow_runs');
  // Gigabytes written at once leave Postgres a checkpoint to write out over the next minutes, right when
  // the scenarios measure; months of traffic would have spread that work. Written out now instead (and
  // before the figures the history is set against, so both start from the same state).
  await stack.checkpoint();
  const [{ size }] = await stack.query(`SELECT pg_size_pretty(pg_total_relation_size('workflow_runs')) AS size`);
  log(`workflow_runs holds ${size} (table, TOAST and indexes) after ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return size;
}

/** Run ids spread uniformly over the workflow's whole history, old and new. */
async function sampledRunIds(stack, workflowId, count) {
  const rows = await stack.query(`SELECT id FROM workflow_runs WHERE workflow_id = $1 ORDER BY random() LIMIT $2`, [workflowId, count]);
  return rows.map((row) => Number(row.id));
}

const TRANSCRIPT = [
  { speaker: 'agent', text: 'Hi Ada Lovelace! I am calling about your appointment on December 1st.', start_ms: 0, end_ms: 4200 },
  { speaker: 'user', text: 'Hello, yes, speaking. Is something wrong with it?', start_ms: 4600, end_ms: 7400 },
  { speaker: 'agent', text: 'Nothing wrong, I only wanted to confirm that 9:30 at North Street still suits you.', start_ms: 7800, end_ms: 12100 },
  { speaker: 'user', text: 'Yes, that works. Thank you.', start_ms: 12500, end_ms: 14000 },
  { speaker: 'agent', text: 'Thank you for your time. Goodbye!', start_ms: 14300, end_ms: 16000 },
  { speaker: 'user', text: 'Goodbye.', start_ms: 16200, end_ms: 16900 },
];

const iso = (at) => `to_char((${at}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
/** One `logs.events` entry, shaped as WorkflowRunStore.transition writes it. */
const event = (at, name, status, detail = 'NULL') =>
  `jsonb_strip_nulls(jsonb_build_object('at', ${iso(at)}, 'event', ${name}, 'status', ${status}, 'detail', ${detail}))`;
/** The first entry is written by Postgres (now() as jsonb), the others by Node (toISOString). */
const queued = `jsonb_build_object('at', to_jsonb(created_at), 'event', 'run.queued', 'status', 'queued')`;
const carrier = `jsonb_build_object('provider', 'sandbox', 'provider_call_id', call_id)`;

const HISTORY_SQL = `
WITH numbered AS (
  SELECT nextval(pg_get_serial_sequence('workflow_runs', 'id')) AS id, g, random() AS roll,
         now() - interval '1 hour' - (($7::integer - g)::double precision / $7::integer) * interval '${HISTORY_DAYS} days'
           - random() * interval '1 minute' AS created_at,
         (2 + floor(random() * 20))::integer AS ring_seconds,
         (20 + floor(random() * 280))::integer AS talk_seconds
    FROM generate_series(1, $7::integer) AS g
), shaped AS (
  SELECT numbered.*, 'SB-' || md5(id::text)::uuid AS call_id,
         CASE ${OUTCOMES.map((o) => `WHEN roll < ${o.upTo} THEN '${o.status}'`).join(' ')} END AS status
    FROM numbered
), timed AS (
  SELECT shaped.*,
         created_at + make_interval(secs => ring_seconds) AS answered_at,
         CASE status WHEN 'completed' THEN created_at + make_interval(secs => ring_seconds + talk_seconds)
                     WHEN 'canceled' THEN created_at + interval '1 second'
                     ELSE created_at + make_interval(secs => ring_seconds) END AS ended_at
    FROM shaped
)
INSERT INTO workflow_runs (
  id, name, organization_id, workflow_id, status, environment, call_type, trigger_uuid, api_key_id,
  telephony_configuration_id, provider, definition_id, phone_number, from_number, provider_call_id,
  initial_context, gathered_context, logs, annotations, cost_info, duration_seconds, answered_at, ended_at,
  end_reason, is_completed, agent_transcript, transcript_key, recording_key, status_changed_at, created_at, updated_at)
SELECT
  id, 'WR-API-' || id, $1::integer, $2::integer, status, CASE WHEN g % 33 = 0 THEN 'test' ELSE 'production' END,
  'outbound', $3::uuid, $4::integer, $5::integer, 'sandbox',
  CASE WHEN status = 'canceled' THEN NULL ELSE $6::integer END,
  '+1415' || lpad(((g::bigint * 7919) % 10000000)::text, 7, '0'),
  CASE WHEN status = 'canceled' THEN NULL ELSE $9::text END,
  CASE WHEN status = 'canceled' THEN NULL ELSE call_id END,
  jsonb_set($8::jsonb, '{customer,id}', to_jsonb('cus_' || to_hex(id))),
  CASE WHEN status = 'completed' THEN '{"conversation": "sandbox"}'::jsonb ELSE '{}'::jsonb END,
  jsonb_build_object('events', jsonb_build_array(${queued}) ||
    CASE WHEN status = 'canceled' THEN jsonb_build_array(${event('ended_at', `'api.canceled'`, `'canceled'`)})
    ELSE jsonb_build_array(
           ${event(`created_at + interval '40 milliseconds'`, `'dialer.dialing'`, `'dialing'`)},
           ${event(`created_at + interval '120 milliseconds'`, `'carrier.ringing'`, `'ringing'`, carrier)}) ||
         CASE status
           WHEN 'completed' THEN jsonb_build_array(
             ${event('answered_at', `'carrier.answered'`, `'in_progress'`, carrier)},
             ${event('ended_at', `'carrier.completed'`, `'completed'`, carrier)})
           WHEN 'failed' THEN jsonb_build_array(
             ${event('ended_at', `'carrier.failed'`, `'failed'`, `${carrier} || '{"reason": "carrier_failure"}'::jsonb`)})
           ELSE jsonb_build_array(${event('ended_at', `'carrier.' || status`, 'status', carrier)})
         END
    END),
  '{}'::jsonb,
  CASE WHEN status = 'completed' THEN jsonb_build_object('call_duration_seconds', talk_seconds) ELSE '{}'::jsonb END,
  CASE WHEN status = 'completed' THEN talk_seconds END,
  CASE WHEN status = 'completed' THEN answered_at END,
  ended_at,
  CASE status ${OUTCOMES.map((o) => `WHEN '${o.status}' THEN '${o.endReason}'`).join(' ')} END,
  true,
  CASE WHEN status = 'completed' THEN $10::jsonb ELSE '[]'::jsonb END,
  CASE WHEN status = 'completed' THEN 'runs/' || id || '/transcript.json' END,
  CASE WHEN status = 'completed' THEN 'runs/' || id || '/recording.wav' END,
  ended_at, created_at, ended_at + interval '300 milliseconds'
FROM timed`;

module.exports = { insertHistory, sampledRunIds };
