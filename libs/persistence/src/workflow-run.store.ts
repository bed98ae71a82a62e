import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { DefinitionGraph } from './definition-graph';
import { RunLogEvent, TelephonyConfiguration } from './entities';
import { WorkflowRun } from './entities/workflow-run.entity';
import { preparedQuery } from './prepared-query';
import { configurationFromRow } from './telephony-configuration-row';
import { AGENT_SESSION_STATUSES, FINAL_RUN_STATUSES, RUN_TRANSITIONS, RunEnvironment, RunStatus, TALKED_AND_ENDED_SQL, isFinalRunStatus } from './run-status';

/** What completes a finished run's record: its artifacts' keys, and the agent turns its transcript was made from. */
export interface RunArtifacts {
  transcriptKey: string | null;
  recordingKey: string | null;
  /** The length of the run's `agent_transcript` the stored transcript was made from (0 when it came from the carrier). */
  agentTurns: number;
  /** Not while an upload of the runtime's recording admitted less than this ago may be arriving (`recordingUploadWaitMs`). */
  uploadWaitMs: number;
}

export interface NewRun {
  organizationId: number;
  workflowId: number;
  environment: RunEnvironment;
  triggerUuid: string;
  apiKeyId: number;
  telephonyConfigurationId: number;
  provider: string;
  phoneNumber: string;
  initialContext: Record<string, unknown>;
  /**
   * The caller's Idempotency-Key and its request's fingerprint: the run is
   * stored only if the key is claimed for it, in the same statement.
   */
  idempotency?: RunIdempotency | null;
}

export interface RunIdempotency {
  key: string;
  /** SHA-256 (hex) of the request the key came with. */
  requestHash: string;
}

/** A status move that happened; `null` from `transition` means the run was not in a status it may move from. */
export interface TransitionOutcome {
  telephonyConfigurationId: number | null;
}

/** What narrows a transition besides the statuses it may move from. */
export interface TransitionGuard {
  /** Only a run whose status has not moved since it was read (its `statusChangedAt` then). */
  unmovedSince?: Date;
  /** Only a run the carrier has given no call id. */
  withoutCallId?: boolean;
  /** Only a run whose latest claim (its `dialer.dialing` entry, or a resume's, logged as `resumeEvent`) is one of `ids`. */
  latestClaim?: { ids: readonly string[]; resumeEvent: string };
}

/** The id of a run's latest claim: its `dialer.dialing` log entry's or, when later, a resume's (logged as `resumeEvent`). */
function latestClaimOf(resumeEvent: string): string {
  return `(SELECT claim.entry->'detail'->>'claim'
             FROM jsonb_array_elements(workflow_runs.logs->'events') WITH ORDINALITY AS claim (entry, n)
            WHERE claim.entry->>'event' IN ('dialer.dialing', ${resumeEvent})
            ORDER BY claim.n DESC LIMIT 1)`;
}

/** Columns a transition may set besides the status. */
export interface RunTransitionFields {
  definitionId?: number;
  fromNumber?: string;
  /** The call's time limit as the dial tells the carrier (set by the claim). */
  maxCallDurationSeconds?: number;
  providerCallId?: string;
  durationSeconds?: number;
  answeredAt?: Date;
  endedAt?: Date;
  endReason?: string;
  costInfo?: Record<string, unknown>;
}

/** One run's part of a grouped move: the fields it sets and the detail of its log entry. */
export interface RunMove {
  runId: number;
  fields: RunTransitionFields;
  detail?: Record<string, unknown>;
  /**
   * Statuses the move passes through on its way, as the events that reported
   * them: each gets its log entry, in order, before the move's own.
   */
  through?: PassedStatus[];
}

/** A status a grouped move passes through, and the log entry of the event that reported it. */
export interface PassedStatus {
  status: RunStatus;
  event: string;
  detail?: Record<string, unknown>;
}

/**
 * The columns a run read answers, named rather than `*`: a statement
 * prepared on a connection keeps the result type it was planned with, so
 * after a migration adds a column, a prepared `SELECT *` (or `RETURNING *`)
 * fails on that connection with "cached plan must not change result type"
 * for as long as the connection lives. Named columns keep the dialers that
 * are still running working through a rolling deploy.
 */
export const RUN_COLUMNS = [
  'id',
  'organization_id',
  'workflow_id',
  'name',
  'status',
  'environment',
  'call_type',
  'trigger_uuid',
  'api_key_id',
  'telephony_configuration_id',
  'provider',
  'definition_id',
  'phone_number',
  'from_number',
  'provider_call_id',
  'initial_context',
  'gathered_context',
  'logs',
  'annotations',
  'cost_info',
  'duration_seconds',
  'answered_at',
  'ended_at',
  'end_reason',
  'is_completed',
  'agent_transcript',
  'max_call_duration_seconds',
  'agent_session_started_at',
  'agent_session_ended_at',
  'recording_upload_admitted_at',
  'carrier_recording_url',
  'transcript_key',
  'recording_key',
  'status_changed_at',
  'created_at',
  'updated_at',
] as const;

const RUN_SELECT = RUN_COLUMNS.join(', ');

/**
 * What a claim answers of the run it moved: the columns a dial reads. The
 * rest of the row (its log, transcript, gathered context, timestamps) would
 * only be turned into text by Postgres and parsed again by the dialer.
 */
export type ClaimedRun = Pick<
  WorkflowRun,
  | 'id'
  | 'organizationId'
  | 'workflowId'
  | 'status'
  | 'telephonyConfigurationId'
  | 'provider'
  | 'definitionId'
  | 'fromNumber'
  | 'phoneNumber'
  | 'initialContext'
>;

const CLAIMED_RUN_RETURNING = [
  'id',
  'organization_id',
  'workflow_id',
  'status',
  'telephony_configuration_id',
  'provider',
  'definition_id',
  'from_number',
  'phone_number',
  'initial_context',
]
  .map((column) => `workflow_runs.${column}`)
  .join(', ');

type RunRow = Record<string, unknown>;

/** Maps a `workflow_runs` row (snake_case columns) to the entity shape. */
function runFromRow(row: RunRow): WorkflowRun {
  const run = new WorkflowRun();
  const date = (value: unknown) => (value === null || value === undefined ? null : new Date(value as string));
  Object.assign(run, {
    id: row.id,
    organizationId: row.organization_id,
    workflowId: row.workflow_id,
    name: row.name,
    status: row.status,
    environment: row.environment,
    callType: row.call_type,
    triggerUuid: row.trigger_uuid,
    apiKeyId: row.api_key_id,
    telephonyConfigurationId: row.telephony_configuration_id,
    provider: row.provider,
    definitionId: row.definition_id,
    phoneNumber: row.phone_number,
    fromNumber: row.from_number,
    providerCallId: row.provider_call_id,
    initialContext: row.initial_context,
    gatheredContext: row.gathered_context,
    logs: row.logs,
    annotations: row.annotations,
    costInfo: row.cost_info,
    durationSeconds: row.duration_seconds,
    answeredAt: date(row.answered_at),
    endedAt: date(row.ended_at),
    endReason: row.end_reason,
    isCompleted: row.is_completed,
    agentTranscript: row.agent_transcript,
    maxCallDurationSeconds: row.max_call_duration_seconds,
    agentSessionStartedAt: date(row.agent_session_started_at),
    agentSessionEndedAt: date(row.agent_session_ended_at),
    recordingUploadAdmittedAt: date(row.recording_upload_admitted_at),
    carrierRecordingUrl: row.carrier_recording_url,
    transcriptKey: row.transcript_key,
    recordingKey: row.recording_key,
    statusChangedAt: date(row.status_changed_at),
    createdAt: date(row.created_at),
    updatedAt: date(row.updated_at),
  });
  return run;
}

function claimedRunFromRow(row: RunRow): ClaimedRun {
  return {
    id: row.id as number,
    organizationId: row.organization_id as number,
    workflowId: row.workflow_id as number,
    status: row.status as RunStatus,
    telephonyConfigurationId: row.telephony_configuration_id as number | null,
    provider: row.provider as string | null,
    definitionId: row.definition_id as number | null,
    fromNumber: row.from_number as string | null,
    phoneNumber: row.phone_number as string,
    initialContext: row.initial_context as Record<string, unknown>,
  };
}

const FIELD_COLUMNS: Record<keyof RunTransitionFields, { column: string; cast: string }> = {
  definitionId: { column: 'definition_id', cast: 'integer' },
  fromNumber: { column: 'from_number', cast: 'text' },
  maxCallDurationSeconds: { column: 'max_call_duration_seconds', cast: 'integer' },
  providerCallId: { column: 'provider_call_id', cast: 'text' },
  durationSeconds: { column: 'duration_seconds', cast: 'double precision' },
  answeredAt: { column: 'answered_at', cast: 'timestamptz' },
  endedAt: { column: 'ended_at', cast: 'timestamptz' },
  endReason: { column: 'end_reason', cast: 'text' },
  costInfo: { column: 'cost_info', cast: 'jsonb' },
};

/**
 * Every write to a run after it is created. Status moves are conditional
 * updates: the row changes only when its current status may move to the new
 * one, and the affected-row count tells the caller whether it won the race.
 */
/**
 * What one run keeps of its agent runtime's reports: transcript turns, bytes
 * of transcript and gathered context, and usage counters (`cost_info.usage`,
 * which every run record and list page carries: a few names, each at most
 * `usageNameLength` characters, not one per turn).
 */
export const AGENT_DATA_LIMITS = { turns: 5000, turnChars: 10_000, bytes: 8 * 1024 * 1024, usageNames: 50, usageNameLength: 100 };

/** The run an agent runtime reported on: what the dialers are told when its session ends. */
export interface AgentSessionCall {
  runId: number;
  organizationId: number;
  provider: string | null;
  providerCallId: string | null;
}

/**
 * What became of a write of the agent runtime: stored (a report answers
 * whose call it was), or refused because no run has the id, its session is
 * closed, it would pass AGENT_DATA_LIMITS, or the run has its recording.
 */
export type AgentSessionWrite = { kind: 'stored'; call?: AgentSessionCall } | { kind: 'no_run' | 'closed' | 'full' | 'exists' };

/** A run's agent session is open: its status one of AGENT_SESSION_STATUSES (passed as `statuses`), not complete, not closed. */
const AGENT_SESSION_OPEN = (statuses: string) =>
  `(status = ANY(${statuses}::text[]) AND NOT is_completed AND agent_session_ended_at IS NULL)`;

/**
 * A completed call's run whose session the dialer closed (to finish the run)
 * while an upload of the runtime's recording it had admitted was arriving:
 * the runtime's own `session_ended` clears the admission.
 */
const UPLOAD_OUTLIVES_SESSION = `(status = 'completed' AND recording_upload_admitted_at IS NOT NULL)`;

/** No upload of the runtime's recording admitted less than `waitMs` (a parameter, in ms) ago may still be arriving. */
const NO_UPLOAD_ARRIVING = (waitMs: string) =>
  `(recording_upload_admitted_at IS NULL OR recording_upload_admitted_at <= now() - make_interval(secs => ${waitMs}::double precision / 1000))`;

/**
 * An upload of the agent runtime's recording may begin: the call ended no
 * more than `waitMs` ago (or not yet), or an earlier upload's admission
 * lapsed without being given back (its gateway stopped under it).
 */
const UPLOAD_MAY_BEGIN = (waitMs: string) =>
  `(recording_upload_admitted_at IS NOT NULL OR ended_at IS NULL OR ended_at > now() - make_interval(secs => ${waitMs}::double precision / 1000))`;

/** How long an Idempotency-Key is kept (as Stripe does); then a repeat starts afresh. */
const IDEMPOTENCY_RETENTION = '24 hours';

/**
 * `insertQueued`'s statement. The run's name carries its own id, so ids are
 * drawn before the insert; the answer is read from the runs stored, which the
 * insert (a part of the same statement, run to its end or failing it whole)
 * stored every one of. The contexts come as one JSON array (element n for
 * input row n): as a `jsonb[]` each ~1 KiB context was escaped into an array
 * literal by the driver, character by character, and unescaped again by Postgres.
 *
 * A run that comes with an Idempotency-Key is stored only if its key is
 * claimed for it here (`claimed`): a new key, an expired one, or one whose
 * first request died holding it with the same body (a claim without a run,
 * as a gateway claiming before storing left it). The key then points at the
 * run from the start, so key and run are committed together or not at all,
 * and there is never a key in flight to answer 409 for. Keys are claimed in
 * key order, so two statements claiming the same keys lock them in the same
 * order and cannot deadlock. A key taken by another request (Postgres waits
 * for that request's statement to end before it decides) stores nothing.
 */
const INSERT_QUEUED_RUNS = `
  WITH numbered AS MATERIALIZED (
    SELECT nextval(pg_get_serial_sequence('workflow_runs', 'id')) AS id, input.*, context.initial_context
      FROM unnest($1::integer[], $2::integer[], $3::text[], $4::uuid[], $5::integer[], $6::integer[], $7::text[],
                  $8::text[], $10::text[], $11::text[])
           WITH ORDINALITY AS input (organization_id, workflow_id, environment, trigger_uuid, api_key_id,
                                     telephony_configuration_id, provider, phone_number, idempotency_key, request_hash, ord)
      JOIN jsonb_array_elements($9::jsonb) WITH ORDINALITY AS context (initial_context, ord) ON context.ord = input.ord
  ), claimed AS (
    INSERT INTO idempotency_keys (organization_id, key, request_hash, run_id, locked_until, expires_at)
    SELECT organization_id, idempotency_key, request_hash, id, now(), now() + interval '${IDEMPOTENCY_RETENTION}'
      FROM numbered
     WHERE idempotency_key IS NOT NULL
     ORDER BY organization_id, idempotency_key
    ON CONFLICT (organization_id, key) DO UPDATE
       SET request_hash = EXCLUDED.request_hash, run_id = EXCLUDED.run_id, created_at = now(),
           locked_until = EXCLUDED.locked_until, expires_at = EXCLUDED.expires_at
     WHERE idempotency_keys.expires_at < now()
        OR (idempotency_keys.run_id IS NULL AND idempotency_keys.locked_until < now()
            AND idempotency_keys.request_hash = EXCLUDED.request_hash)
    RETURNING run_id
  ), stored AS MATERIALIZED (
    SELECT * FROM numbered WHERE idempotency_key IS NULL OR id IN (SELECT run_id FROM claimed)
  ), inserted AS (
    INSERT INTO workflow_runs (id, name, status, organization_id, workflow_id, environment, trigger_uuid, api_key_id,
                               telephony_configuration_id, provider, phone_number, initial_context, logs)
    SELECT id, 'WR-API-' || id, 'queued', organization_id, workflow_id, environment, trigger_uuid, api_key_id,
           telephony_configuration_id, provider, phone_number, initial_context,
           jsonb_build_object('events', jsonb_build_array(jsonb_build_object('at', now(), 'event', 'run.queued', 'status', 'queued')))
      FROM stored
  )
  SELECT id, ord FROM stored`;

@Injectable()
export class WorkflowRunStore {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Stores queued runs in one statement (the gateway groups concurrent
   * triggers into it) and answers their ids in input order. A run that comes
   * with an Idempotency-Key is stored only if the statement claims the key
   * for it; where the key is held (by an earlier request, or by one before it
   * in this group) the answer is null and nothing is stored for that run.
   */
  async insertQueued(runs: NewRun[], manager: EntityManager = this.dataSource.manager): Promise<Array<number | null>> {
    const ids = new Array<number | null>(runs.length).fill(null);
    const positions = sentPositions(runs);
    const sent = positions.map((position) => runs[position]);
    if (sent.length === 0) return ids;
    // One statement text whatever the number of runs (one array per column), so Postgres reads and plans the
    // same short statement each time instead of a VALUES list of ten parameters a run.
    const values = [
      sent.map((run) => run.organizationId),
      sent.map((run) => run.workflowId),
      sent.map((run) => run.environment),
      sent.map((run) => run.triggerUuid),
      sent.map((run) => run.apiKeyId),
      sent.map((run) => run.telephonyConfigurationId),
      sent.map((run) => run.provider),
      sent.map((run) => run.phoneNumber),
      JSON.stringify(sent.map((run) => run.initialContext)),
      sent.map((run) => run.idempotency?.key ?? null),
      sent.map((run) => run.idempotency?.requestHash ?? null),
    ];
    // Inside a caller's transaction the statement goes through its manager (its connection); alone, prepared.
    const rows: Array<{ id: number; ord: string }> =
      manager === this.dataSource.manager ? await preparedQuery(this.dataSource, INSERT_QUEUED_RUNS, values) : await manager.query(INSERT_QUEUED_RUNS, values);
    for (const row of rows) ids[positions[Number(row.ord) - 1]] = row.id;
    return ids;
  }

  /**
   * One run by id: raw SQL, since this is on every hot path and the ORM's
   * query building costs more than the query, and prepared (see preparedQuery).
   */
  async findById(runId: number): Promise<WorkflowRun | null> {
    const rows = await preparedQuery<RunRow>(this.dataSource, `SELECT ${RUN_SELECT} FROM workflow_runs WHERE id = $1`, [runId]);
    return rows.length ? runFromRow(rows[0]) : null;
  }

  /** The runs among `ids` that exist, in no particular order (one round trip for many concurrent readers). */
  async findManyById(ids: number[]): Promise<WorkflowRun[]> {
    if (ids.length === 0) return [];
    const rows = await preparedQuery<RunRow>(this.dataSource, `SELECT ${RUN_SELECT} FROM workflow_runs WHERE id = ANY($1::bigint[])`, [ids]);
    return rows.map(runFromRow);
  }

  /** One run, only if it belongs to this workflow and organization. */
  async findScoped(runId: number, workflowId: number, organizationId: number): Promise<WorkflowRun | null> {
    const rows: RunRow[] = await this.dataSource.query(
      `SELECT ${RUN_SELECT} FROM workflow_runs WHERE id = $1 AND workflow_id = $2 AND organization_id = $3`,
      [runId, workflowId, organizationId],
    );
    return rows.length ? runFromRow(rows[0]) : null;
  }

  /**
   * Moves the run to `to` if its current status allows it, sets `fields`, and
   * appends one entry to `logs.events`. Returns null when the row did not change.
   * `from` narrows the statuses the move is allowed from (never widens them);
   * `guard` narrows it further (see TransitionGuard).
   */
  async transition(
    runId: number,
    to: RunStatus,
    event: string,
    fields: RunTransitionFields = {},
    detail?: Record<string, unknown>,
    from: readonly RunStatus[] = RUN_TRANSITIONS[to],
    guard: TransitionGuard = {},
  ): Promise<TransitionOutcome | null> {
    const params: unknown[] = [runId, to, from.filter((status) => RUN_TRANSITIONS[to].includes(status))];
    const conditions = ['id = $1', 'status = ANY($3::text[])'];
    if (guard.unmovedSince) {
      params.push(guard.unmovedSince);
      // A run read back carries its instant to the millisecond; Postgres keeps microseconds.
      conditions.push(`date_trunc('milliseconds', status_changed_at) = $${params.length}::timestamptz`);
    }
    if (guard.withoutCallId) conditions.push('provider_call_id IS NULL');
    if (guard.latestClaim) {
      params.push(guard.latestClaim.ids, guard.latestClaim.resumeEvent);
      conditions.push(`${latestClaimOf(`$${params.length}`)} = ANY($${params.length - 1}::text[])`);
    }
    const sets = ['status = $2', 'updated_at = now()', 'status_changed_at = now()'];
    for (const [key, value] of Object.entries(fields) as Array<[keyof RunTransitionFields, unknown]>) {
      if (value === undefined) continue;
      const { column, cast } = FIELD_COLUMNS[key];
      params.push(cast === 'jsonb' ? JSON.stringify(value) : value);
      sets.push(`${column} = ${fieldAssignment(key, column, `$${params.length}::${cast}`)}`);
    }
    // Final statuses without artifacts are complete at once; `completed` waits for its artifacts.
    if (isFinalRunStatus(to) && to !== 'completed') sets.push('is_completed = true');
    const entry: RunLogEvent = { at: new Date().toISOString(), event, status: to, ...(detail ? { detail } : {}) };
    params.push(JSON.stringify([entry]));
    sets.push(`logs = jsonb_set(logs, '{events}', COALESCE(logs->'events', '[]'::jsonb) || $${params.length}::jsonb)`);
    const [rows]: [Array<{ telephony_configuration_id: number | null }>, number] = await this.dataSource.query(
      `UPDATE workflow_runs SET ${sets.join(', ')} WHERE ${conditions.join(' AND ')}
       RETURNING telephony_configuration_id`,
      params,
    );
    return rows.length ? { telephonyConfigurationId: rows[0].telephony_configuration_id } : null;
  }

  /**
   * `transition` for many runs in one statement: every move goes to `to` as
   * `event` and sets the same fields (each run its own values). A run may
   * appear once. Answers each move's outcome, in order.
   */
  async transitionMany(
    to: RunStatus,
    event: string,
    moves: RunMove[],
    from: readonly RunStatus[] = RUN_TRANSITIONS[to],
  ): Promise<Array<TransitionOutcome | null>> {
    const rows = await this.moveMany(to, event, moves, 'workflow_runs.id, workflow_runs.telephony_configuration_id', from);
    const moved = new Map(rows.map((row) => [row.id as number, { telephonyConfigurationId: row.telephony_configuration_id as number | null }]));
    return moves.map((move) => moved.get(move.runId) ?? null);
  }

  /**
   * `transitionMany` answering each moved run as the move left it (null for
   * a run that did not move): a claim and the read of what it claimed in one
   * statement.
   */
  async transitionManyReturningRuns(to: RunStatus, event: string, moves: RunMove[]): Promise<Array<ClaimedRun | null>> {
    const rows = await this.moveMany(to, event, moves, CLAIMED_RUN_RETURNING, RUN_TRANSITIONS[to]);
    const moved = new Map(rows.map((row) => [row.id as number, claimedRunFromRow(row)]));
    return moves.map((move) => moved.get(move.runId) ?? null);
  }

  /**
   * Takes up a claim whose answer was lost: the run as `claim` answers it,
   * when it is still `dialing`, without a call, and its latest claim (the
   * `dialer.dialing` entry or a resume's) is one of `held`. The resume is a
   * claim of its own, under the id `resumedAs`: once it commits, no job
   * holding an earlier id can take the run up again, so a dial sent under a
   * resume is never sent twice (by this job's retry or by a copy of it). The
   * dial's age starts again (`status_changed_at`), and the run records what
   * this dial goes out with, as a claim does (`fields`: the from number, the
   * call's time limit, and the definition when one is found). Null for any
   * other run: queued (the claim never committed), moved on, or claimed
   * since by another.
   */
  async resumeClaim(
    runId: number,
    held: readonly string[],
    resumedAs: string,
    event: string,
    fields: { fromNumber: string; maxCallDurationSeconds: number; definitionId?: number },
  ): Promise<ClaimedRun | null> {
    const entry: RunLogEvent = { at: new Date().toISOString(), event, status: 'dialing', detail: { claim: resumedAs } };
    const [rows]: [RunRow[], number] = await this.dataSource.query(
      `UPDATE workflow_runs
          SET updated_at = now(), status_changed_at = now(), from_number = $5, definition_id = COALESCE($6::integer, definition_id),
              max_call_duration_seconds = $7,
              logs = jsonb_set(logs, '{events}', COALESCE(logs->'events', '[]'::jsonb) || $3::jsonb)
        WHERE id = $1 AND status = 'dialing' AND provider_call_id IS NULL AND ${latestClaimOf('$4')} = ANY($2::text[])
        RETURNING ${CLAIMED_RUN_RETURNING}`,
      [runId, held, JSON.stringify([entry]), event, fields.fromNumber, fields.definitionId ?? null, fields.maxCallDurationSeconds],
    );
    return rows.length > 0 ? claimedRunFromRow(rows[0]) : null;
  }

  private async moveMany(
    to: RunStatus,
    event: string,
    unordered: RunMove[],
    returning: string,
    from: readonly RunStatus[],
  ): Promise<RunRow[]> {
    if (unordered.length === 0) return [];
    // Postgres locks rows in the order its plan visits them; these statements' plan, a nested loop over the input
    // (README, "Where the time goes"), visits them as given. In run id order, two grouped statements sharing runs
    // lock them in the same order. A deadlock that happens all the same fails its group, sent again run by run.
    const moves = [...unordered].sort((a, b) => a.runId - b.runId);
    const at = new Date().toISOString();
    const entry = (status: RunStatus, name: string, detail?: Record<string, unknown>): RunLogEvent => ({
      at,
      event: name,
      status,
      ...(detail ? { detail } : {}),
    });
    const entries = moves.map(({ detail, through = [] }) =>
      JSON.stringify([...through.map((step) => entry(step.status, step.event, step.detail)), entry(to, event, detail)]),
    );
    const allowed = from.filter((status) => RUN_TRANSITIONS[to].includes(status));
    const params: unknown[] = [to, allowed, moves.map((move) => move.runId), entries];
    const inputs = ['$3::bigint[]', '$4::jsonb[]'];
    const names = ['id', 'entry'];
    const sets = ['status = $1', 'updated_at = now()', 'status_changed_at = now()'];
    const keys = (Object.keys(moves[0].fields) as Array<keyof RunTransitionFields>).filter((key) => moves[0].fields[key] !== undefined);
    keys.forEach((key, index) => {
      const { column, cast } = FIELD_COLUMNS[key];
      params.push(moves.map((move) => (cast === 'jsonb' ? JSON.stringify(move.fields[key]) : move.fields[key])));
      inputs.push(`$${params.length}::${cast}[]`);
      const value = `input.f${index}`;
      names.push(`f${index}`);
      sets.push(`${column} = ${fieldAssignment(key, `workflow_runs.${column}`, value)}`);
    });
    if (isFinalRunStatus(to) && to !== 'completed') sets.push('is_completed = true');
    sets.push(`logs = jsonb_set(workflow_runs.logs, '{events}', COALESCE(workflow_runs.logs->'events', '[]'::jsonb) || input.entry)`);
    // One text per kind of move (target, fields set, what it answers), whatever the number of runs: prepared.
    return preparedQuery<RunRow>(
      this.dataSource,
      `UPDATE workflow_runs SET ${sets.join(', ')}
         FROM unnest(${inputs.join(', ')}) AS input (${names.join(', ')})
        WHERE workflow_runs.id = input.id AND workflow_runs.status = ANY($2::text[])
        RETURNING ${returning}`,
      params,
    );
  }

  /**
   * Whether a call a carrier found by the dial's numbers may be another
   * run's: another open run dialed through the same carrier the same number
   * from the same number and holds that call id, or holds none yet. Of any
   * configuration, any organization: two configurations can share one
   * carrier account and from number (a team's two lines, an agency's
   * clients), and the carrier's list of calls is the account's. Open runs
   * only (the partial index of open runs), so it stays cheap on a large
   * table; a finished run's call is not seen.
   */
  async anotherOpenRunMayOwn(
    run: { id: number; phoneNumber: string },
    provider: string,
    fromNumber: string,
    providerCallId: string,
  ): Promise<boolean> {
    const [row] = await this.dataSource.query(
      `SELECT EXISTS (
         SELECT 1 FROM workflow_runs
          WHERE NOT is_completed AND status IN ('dialing', 'ringing', 'in_progress', 'completed')
            AND id <> $1 AND provider = $2 AND phone_number = $3 AND from_number = $4
            AND (provider_call_id = $5 OR provider_call_id IS NULL)
       ) AS taken`,
      [run.id, provider, run.phoneNumber, fromNumber, providerCallId],
    );
    return row.taken === true;
  }

  /** Records the carrier's id for the call without changing the status. */
  async recordProviderCallId(runId: number, providerCallId: string): Promise<void> {
    await this.dataSource.query(
      `UPDATE workflow_runs SET provider_call_id = $2, updated_at = now() WHERE id = $1 AND provider_call_id IS NULL`,
      [runId, providerCallId],
    );
  }

  /** `recordProviderCallId` for many runs in one statement. */
  async recordProviderCallIds(unordered: Array<{ runId: number; providerCallId: string }>): Promise<void> {
    if (unordered.length === 0) return;
    const calls = byRunId(unordered);
    await preparedQuery(
      this.dataSource,
      `UPDATE workflow_runs SET provider_call_id = input.provider_call_id, updated_at = now()
         FROM unnest($1::bigint[], $2::text[]) AS input (id, provider_call_id)
        WHERE workflow_runs.id = input.id AND workflow_runs.provider_call_id IS NULL`,
      [calls.map((call) => call.runId), calls.map((call) => call.providerCallId)],
    );
  }

  /**
   * The carrier a claimed run is dialed through, when it is not the one the
   * run was stored with: a configuration's provider changed while a gateway
   * still held the old one (its lookups may be 5 s stale). The run's webhooks
   * are accepted from its stored provider only, so it must name the one that
   * places its call. Only before the dial: nothing has reached a carrier yet.
   */
  async setProvider(runId: number, provider: string, detail: Record<string, unknown>): Promise<void> {
    const entry: RunLogEvent = { at: new Date().toISOString(), event: 'dialer.provider_changed', detail };
    await this.dataSource.query(
      `UPDATE workflow_runs
          SET provider = $2, updated_at = now(), logs = jsonb_set(logs, '{events}', COALESCE(logs->'events', '[]'::jsonb) || $3::jsonb)
        WHERE id = $1 AND provider_call_id IS NULL`,
      [runId, provider, JSON.stringify([entry])],
    );
  }

  /** Sets one top-level key of `logs` (not `events`), in place. */
  async setLog(runId: number, key: string, value: unknown): Promise<void> {
    if (key === 'events') throw new Error('logs.events is written through transition() only');
    await this.dataSource.query(
      `UPDATE workflow_runs SET logs = jsonb_set(logs, ARRAY[$2::text], $3::jsonb), updated_at = now() WHERE id = $1`,
      [runId, key, JSON.stringify(value)],
    );
  }

  /** Records a carrier event that changes no status (duplicates, late arrivals), for the run's history. */
  async appendEvent(runId: number, event: string, detail?: Record<string, unknown>): Promise<void> {
    const entry: RunLogEvent = { at: new Date().toISOString(), event, ...(detail ? { detail } : {}) };
    await this.dataSource.query(
      `UPDATE workflow_runs
          SET logs = jsonb_set(logs, '{events}', COALESCE(logs->'events', '[]'::jsonb) || $2::jsonb), updated_at = now()
        WHERE id = $1`,
      [runId, JSON.stringify([entry])],
    );
  }

  /**
   * Stores artifact keys and marks a completed run complete; a no-op when
   * already done. A recording the run already has (the agent runtime's
   * upload) is kept. `agentTurns`: how many of the agent runtime's turns the
   * stored transcript was made from; a run that holds another number by now
   * (a runtime that reported without reading its session first, while the
   * transcript was being stored) is left incomplete, to be collected again;
   * so is a run without a recording whose runtime's upload, admitted since
   * (a runtime that uploaded without reading its session first), may still
   * be arriving: its recording is kept in place of any other.
   */
  async completeArtifacts(runId: number, artifacts: RunArtifacts): Promise<boolean> {
    const [, affected] = await this.dataSource.query(
      `UPDATE workflow_runs
          SET transcript_key = COALESCE($2, transcript_key), recording_key = COALESCE(recording_key, $3),
              is_completed = true, updated_at = now()
        WHERE id = $1 AND status = 'completed' AND NOT is_completed AND jsonb_array_length(agent_transcript) = $4
          AND (recording_key IS NOT NULL OR ${NO_UPLOAD_ARRIVING('$5')})`,
      [runId, artifacts.transcriptKey, artifacts.recordingKey, artifacts.agentTurns, artifacts.uploadWaitMs],
    );
    return affected > 0;
  }

  /** `completeArtifacts` for many runs in one statement; answers the ids it completed. */
  async completeArtifactsMany(unordered: Array<RunArtifacts & { runId: number }>): Promise<number[]> {
    if (unordered.length === 0) return [];
    const runs = byRunId(unordered);
    const rows = await preparedQuery<{ id: number }>(
      this.dataSource,
      `UPDATE workflow_runs
          SET transcript_key = COALESCE(input.transcript_key, workflow_runs.transcript_key),
              recording_key = COALESCE(workflow_runs.recording_key, input.recording_key),
              is_completed = true, updated_at = now()
         FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::double precision[])
              AS input (id, transcript_key, recording_key, agent_turns, upload_wait_ms)
        WHERE workflow_runs.id = input.id AND workflow_runs.status = 'completed' AND NOT workflow_runs.is_completed
          AND jsonb_array_length(workflow_runs.agent_transcript) = input.agent_turns
          AND (workflow_runs.recording_key IS NOT NULL OR ${NO_UPLOAD_ARRIVING('input.upload_wait_ms')})
        RETURNING workflow_runs.id`,
      [
        runs.map((run) => run.runId),
        runs.map((run) => run.transcriptKey),
        runs.map((run) => run.recordingKey),
        runs.map((run) => run.agentTurns),
        runs.map((run) => run.uploadWaitMs),
      ],
    );
    return rows.map((row) => row.id);
  }

  /**
   * What the voice-agent runtime reports during the call, stored only while
   * its session is open (the run in AGENT_SESSION_STATUSES, not complete, the
   * session not closed): the statement checks the session itself, so a report
   * costs one round trip. Refused as `closed` once the run is complete or its
   * session has ended (a report that raced the one ending it: the transcript
   * may have been read for the run's artifact already), `full` when it would
   * take the run past AGENT_DATA_LIMITS, which bound the row every read
   * loads (turns the run has already count for nothing), `no_run` when no
   * run has the id. Stored, it answers whose call it was, for the dialers to
   * be told of a session that ended.
   */
  async recordAgentReport(
    runId: number,
    report: {
      turns?: Array<Record<string, unknown>>;
      gatheredContext?: Record<string, unknown>;
      usage?: Record<string, unknown>;
      ended?: boolean;
    },
  ): Promise<AgentSessionWrite> {
    const rows = await preparedQuery<{ organization_id: number; provider: string | null; provider_call_id: string | null }>(
      this.dataSource,
      `WITH run AS (
         -- Locked first, so the turns found new below are new to the transcript this statement extends: a report
         -- sent again while the first was being stored waits for it, then adds nothing.
         SELECT agent_transcript FROM workflow_runs WHERE id = $1 AND ${AGENT_SESSION_OPEN('$8')} FOR NO KEY UPDATE
       ), fresh AS (
         -- A turn the run has already (same speaker, text and times: a runtime's retry of a report whose answer it
         -- lost) is not added again, nor counted against the limits: such a retry at a limit is stored, not refused.
         -- One row for the run locked above, none without it.
         SELECT (SELECT COALESCE(jsonb_agg(sent.turn ORDER BY sent.n), '[]'::jsonb)
                   FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS sent (turn, n)
                  WHERE NOT run.agent_transcript @> jsonb_build_array(sent.turn)) AS turns
           FROM run
       )
       UPDATE workflow_runs
          -- A column a report adds nothing to is assigned as it is, not as itself plus nothing: Postgres then keeps
          -- its stored value (up to 8 MiB, out of line) rather than write it whole again.
          SET agent_transcript = CASE WHEN jsonb_array_length(fresh.turns) = 0 THEN agent_transcript ELSE agent_transcript || fresh.turns END,
              -- answered_by is the carrier's machine-detection verdict once it has come: a report does not replace it.
              gathered_context = CASE WHEN $3::jsonb = '{}'::jsonb THEN gathered_context
                                      ELSE gathered_context || CASE WHEN gathered_context ? 'answered_by' THEN $3::jsonb - 'answered_by' ELSE $3::jsonb END END,
              cost_info = CASE WHEN $4::jsonb = '{}'::jsonb THEN cost_info
                               ELSE jsonb_set(cost_info, '{usage}', COALESCE(cost_info->'usage', '{}'::jsonb) || $4::jsonb) END,
              agent_session_ended_at = CASE WHEN $5 THEN COALESCE(agent_session_ended_at, now()) ELSE agent_session_ended_at END,
              -- Ended by the runtime itself: an upload of its still arriving is refused, as every later request is.
              recording_upload_admitted_at = CASE WHEN $5 THEN NULL ELSE recording_upload_admitted_at END,
              -- A runtime that reports without having read its session first is waited for all the same.
              agent_session_started_at = COALESCE(agent_session_started_at, now()),
              updated_at = now()
         FROM fresh
        WHERE id = $1 AND ${AGENT_SESSION_OPEN('$8')}
          AND jsonb_array_length(agent_transcript) + jsonb_array_length(fresh.turns) <= $6
          -- The context as the merge leaves it: a runtime that sends its whole context each turn replaces keys, not adds.
          AND octet_length(agent_transcript::text) + octet_length(fresh.turns::text) + octet_length((gathered_context || $3::jsonb)::text) <= $7
          AND ($4::jsonb = '{}'::jsonb OR (SELECT count(*) FROM jsonb_object_keys(COALESCE(cost_info->'usage', '{}'::jsonb) || $4::jsonb)) <= $9)
        RETURNING organization_id, provider, provider_call_id`,
      [
        runId,
        JSON.stringify(report.turns ?? []),
        JSON.stringify(report.gatheredContext ?? {}),
        JSON.stringify(report.usage ?? {}),
        report.ended ?? false,
        AGENT_DATA_LIMITS.turns,
        AGENT_DATA_LIMITS.bytes,
        AGENT_SESSION_STATUSES,
        AGENT_DATA_LIMITS.usageNames,
      ],
    );
    if (rows.length > 0) {
      const [row] = rows;
      return { kind: 'stored', call: { runId, organizationId: row.organization_id, provider: row.provider, providerCallId: row.provider_call_id } };
    }
    const refused = await this.whyAgentWriteRefused(runId);
    return { kind: refused.kind ?? 'full' };
  }

  /**
   * Admits an upload of the agent runtime's recording on its head, while its
   * session is open and the run has no recording (a run keeps one), and
   * notes when: the dialer finishing the call waits for the upload while its
   * body may still be arriving, and a session the dialer closes meanwhile
   * does not refuse it (see recordAgentRecording). The session counts as
   * started, as on a report: a runtime that uploads without having read its
   * session is waited for all the same. Not while another upload, admitted
   * less than `uploadWaitMs` ago, may still be arriving (on any gateway): a
   * run notes one admission, and a second that then stored nothing would
   * forget the first's. Nor once the call ended `uploadWaitMs` ago: an
   * upload begun by then had the time to arrive, and a runtime retrying
   * uploads that never finish (each admission given back as it fails)
   * would otherwise keep the run from completing until its token expired.
   * But for the retry of an upload whose admission lapsed, not given back
   * (its gateway stopped under it): one at most each `uploadWaitMs`.
   * Refused, it says why: `no_run`, `closed` (too late included), `exists`,
   * or `arriving`.
   */
  async admitAgentRecording(
    runId: number,
    uploadWaitMs: number,
  ): Promise<{ kind: 'stored'; admittedAt: Date } | { kind: 'no_run' | 'closed' | 'exists' | 'arriving' }> {
    // To the millisecond, as a Date holds it: the admission is forgotten by its time (`forgetAgentRecordingAdmission`).
    const rows = await preparedQuery<{ admitted_at: Date }>(
      this.dataSource,
      `UPDATE workflow_runs
          SET recording_upload_admitted_at = date_trunc('milliseconds', now()),
              agent_session_started_at = COALESCE(agent_session_started_at, now()), updated_at = now()
        WHERE id = $1 AND recording_key IS NULL AND ${AGENT_SESSION_OPEN('$2')} AND ${NO_UPLOAD_ARRIVING('$3')}
          AND ${UPLOAD_MAY_BEGIN('$3')}
        RETURNING recording_upload_admitted_at AS admitted_at`,
      [runId, AGENT_SESSION_STATUSES, uploadWaitMs],
    );
    if (rows.length > 0) return { kind: 'stored', admittedAt: rows[0].admitted_at };
    const refused = await this.whyAgentWriteRefused(runId, `(${AGENT_SESSION_OPEN('$2')} AND ${UPLOAD_MAY_BEGIN('$3')})`, [uploadWaitMs]);
    // Open, without a recording: another upload's admission is noted (or was, an instant ago: a retry is harmless).
    return { kind: refused.kind ?? (refused.hasRecording ? 'exists' : 'arriving') };
  }

  /**
   * An admitted upload that ended without being stored (refused on
   * admission by the gateway's own limits, cut short, failed): the dialer
   * finishing the call need not wait for it. Only that admission: one made
   * since (a retry) stays.
   */
  async forgetAgentRecordingAdmission(runId: number, admittedAt: Date): Promise<void> {
    await this.dataSource.query(
      `UPDATE workflow_runs SET recording_upload_admitted_at = NULL, updated_at = now()
        WHERE id = $1 AND recording_upload_admitted_at = $2 AND recording_key IS NULL`,
      [runId, admittedAt],
    );
  }

  /**
   * Stores the recording the agent runtime uploaded, when the run has none
   * (a run keeps one), in one statement: while its session is open, or once
   * the dialer closed it to finish the completed call while the upload,
   * admitted before, was arriving (UPLOAD_OUTLIVES_SESSION). Stored on a run
   * already complete, it is a late recording, as a carrier's announced after
   * the run finished: `recording_url` appears then, and the run's log says
   * so. Refused, it says why: `no_run`, `closed` (as for a report: the
   * runtime ended its session, or the run ended other than completed), or
   * `exists`.
   */
  async recordAgentRecording(runId: number, recordingKey: string): Promise<AgentSessionWrite> {
    const late: RunLogEvent = { at: new Date().toISOString(), event: 'artifacts.late_recording_stored', detail: { source: 'agent_runtime' } };
    const rows = await preparedQuery<{ id: number }>(
      this.dataSource,
      `UPDATE workflow_runs
          SET recording_key = $2, updated_at = now(),
              logs = CASE WHEN is_completed THEN jsonb_set(logs, '{events}', COALESCE(logs->'events', '[]'::jsonb) || $4::jsonb) ELSE logs END
        WHERE id = $1 AND recording_key IS NULL AND (${AGENT_SESSION_OPEN('$3')} OR ${UPLOAD_OUTLIVES_SESSION})
        RETURNING id`,
      [runId, recordingKey, AGENT_SESSION_STATUSES, JSON.stringify([late])],
    );
    if (rows.length > 0) return { kind: 'stored' };
    const refused = await this.whyAgentWriteRefused(runId, `(${AGENT_SESSION_OPEN('$2')} OR ${UPLOAD_OUTLIVES_SESSION})`);
    return { kind: refused.kind ?? (refused.hasRecording ? 'exists' : 'closed') };
  }

  /**
   * Why a write of the agent runtime changed nothing, when the run's own
   * state says so (no run, a closed session); `writable`: the condition the
   * write took the run under (the open session, or another the write named,
   * over $2, the session statuses, and `params` from $3 on).
   */
  private async whyAgentWriteRefused(
    runId: number,
    writable = AGENT_SESSION_OPEN('$2'),
    params: unknown[] = [],
  ): Promise<{ kind?: 'no_run' | 'closed'; hasRecording?: boolean }> {
    const [row] = await preparedQuery<{ open: boolean; has_recording: boolean }>(
      this.dataSource,
      `SELECT ${writable} AS open, recording_key IS NOT NULL AS has_recording FROM workflow_runs WHERE id = $1`,
      [runId, AGENT_SESSION_STATUSES, ...params],
    );
    if (!row) return { kind: 'no_run' };
    return row.open ? { hasRecording: row.has_recording } : { kind: 'closed' };
  }

  /**
   * A run and the definition it was dialed with (null when it has none, or
   * that definition is gone), in one round trip: what an agent runtime's
   * session read needs.
   */
  async findWithDefinition(runId: number): Promise<{ run: WorkflowRun; definition: DefinitionGraph | null } | null> {
    const rows = await preparedQuery<RunRow & { run_definition: DefinitionGraph | null }>(
      this.dataSource,
      `SELECT ${RUN_SELECT}, (SELECT definition FROM workflow_definitions WHERE id = workflow_runs.definition_id) AS run_definition
         FROM workflow_runs WHERE id = $1`,
      [runId],
    );
    return rows.length ? { run: runFromRow(rows[0]), definition: rows[0].run_definition } : null;
  }

  /**
   * A run and its telephony configuration (null when it has none, or that
   * configuration is gone), in one round trip: what a carrier's webhook
   * needs to verify its signature before it changes anything.
   */
  async findWithConfiguration(runId: number): Promise<{ run: WorkflowRun; configuration: TelephonyConfiguration | null } | null> {
    const rows = await preparedQuery<RunRow & { run_configuration: Record<string, unknown> | null }>(
      this.dataSource,
      `SELECT ${RUN_SELECT},
              (SELECT to_jsonb(c) FROM telephony_configurations c WHERE c.id = workflow_runs.telephony_configuration_id) AS run_configuration
         FROM workflow_runs WHERE id = $1`,
      [runId],
    );
    if (!rows.length) return null;
    const configuration = rows[0].run_configuration;
    return { run: runFromRow(rows[0]), configuration: configuration ? configurationFromRow(configuration) : null };
  }

  /**
   * Notes that an agent runtime was handed this call, so its report is
   * awaited before the run is finished; false (nothing noted) when the run
   * has already ended.
   */
  async markAgentSessionStarted(runId: number): Promise<boolean> {
    const rows = await preparedQuery<{ id: number }>(
      this.dataSource,
      `UPDATE workflow_runs SET agent_session_started_at = COALESCE(agent_session_started_at, now()), updated_at = now()
        WHERE id = $1 AND status <> ALL($2::text[])
        RETURNING id`,
      [runId, FINAL_RUN_STATUSES],
    );
    return rows.length > 0;
  }

  /**
   * Closes the agent runtime's session of a run being finished without it (a
   * machine hung up on, the reaper forcing it): from here its reports are
   * refused (410), so the turns answered are the transcript's last. Null
   * when the run is complete already, or while an upload of the runtime's
   * recording admitted less than `uploadWaitMs` ago may still be arriving
   * (the run has no recording yet): that upload is waited for, and decided
   * on the row, so one admitted as the session is closed is seen.
   */
  async closeAgentSession(runId: number, uploadWaitMs = 0): Promise<Array<Record<string, unknown>> | null> {
    const [rows]: [Array<{ agent_transcript: Array<Record<string, unknown>> }>, number] = await this.dataSource.query(
      `UPDATE workflow_runs SET agent_session_ended_at = COALESCE(agent_session_ended_at, now()), updated_at = now()
        WHERE id = $1 AND NOT is_completed
          AND (recording_key IS NOT NULL OR ${NO_UPLOAD_ARRIVING('$2')})
        RETURNING agent_transcript`,
      [runId, uploadWaitMs],
    );
    return rows.length > 0 ? rows[0].agent_transcript : null;
  }

  /**
   * Stores a run's recording unless it has one: the agent runtime's one
   * upload, or a carrier's recording announced after the run was finished
   * without one. With `uploadWaitMs`, not while an upload of the runtime's
   * recording admitted less than that ago may still be arriving: the
   * runtime's is kept in place of the carrier's, so a carrier recording
   * fetched as the upload began does not take its place. Answers whether it
   * was stored.
   */
  async recordRecordingIfNone(runId: number, recordingKey: string, uploadWaitMs?: number): Promise<boolean> {
    const [, affected] = await this.dataSource.query(
      `UPDATE workflow_runs SET recording_key = $2, updated_at = now()
        WHERE id = $1 AND recording_key IS NULL
          AND ($3::double precision IS NULL OR ${NO_UPLOAD_ARRIVING('$3')})`,
      [runId, recordingKey, uploadWaitMs ?? null],
    );
    return affected > 0;
  }

  /**
   * The answer time an answer event gives a run it did not move (the run
   * had moved past `ringing` already), never later than the hang-up:
   * - a completed run without one gets it: the hang-up was applied before
   *   the answer (the two events' jobs ran side by side);
   * - with `exact` (the carrier's report of the answer itself), it replaces
   *   the time of a run answered or ended after talking when that time came
   *   from an event whose time is not the answer's (`answerTimeEstimated`):
   *   a later one (an answering-machine verdict applied first, Telnyx's
   *   look-up), or, earlier or later, the very time the move to
   *   `in_progress` logged as estimated (`estimated_answer_at`: Twilio's,
   *   Plivo's and Vonage's look-ups give the call's start, ring time
   *   included); once replaced, only an earlier one replaces it again. A
   *   duration computed from the replaced time is computed again; a
   *   carrier's duration is kept.
   * An estimated time never replaces one. Answers whether it was set.
   */
  async fillAnsweredAt(runId: number, answeredAt: Date, exact: boolean): Promise<boolean> {
    const computed = (from: string) => `GREATEST(0, EXTRACT(EPOCH FROM ended_at - ${from}))::double precision`;
    const wasComputed = `(answered_at IS NOT NULL AND duration_seconds = ${computed('answered_at')})`;
    const [, affected] = await this.dataSource.query(
      `UPDATE workflow_runs
          SET answered_at = $2,
              duration_seconds = CASE WHEN ${wasComputed} THEN ${computed('$2')} ELSE duration_seconds END,
              cost_info = CASE WHEN ${wasComputed} THEN cost_info || jsonb_build_object('call_duration_seconds', ${computed('$2')})
                               ELSE cost_info END,
              updated_at = now()
        WHERE id = $1 AND (ended_at IS NULL OR ended_at >= $2)
          AND ((status = 'completed' AND answered_at IS NULL)
               OR ($3 AND (status = 'in_progress' OR ${TALKED_AND_ENDED_SQL})
                   AND (answered_at > $2
                        OR (answered_at <> $2 AND EXISTS (
                              SELECT 1 FROM jsonb_array_elements(logs->'events') AS entry
                               WHERE entry->>'event' = 'carrier.answered'
                                 AND (entry->'detail'->>'estimated_answer_at')::timestamptz = answered_at)))))`,
      [runId, answeredAt, exact],
    );
    return affected > 0;
  }

  /** Where the carrier's recording can be fetched; the dialer copies it into our storage. */
  async recordCarrierRecordingUrl(runId: number, url: string): Promise<void> {
    await this.dataSource.query(`UPDATE workflow_runs SET carrier_recording_url = $2, updated_at = now() WHERE id = $1`, [runId, url]);
  }

  /**
   * Sets the duration of a run that completed, or that failed once answered
   * (the reaper ended the call past its maximum duration and hung it up: the
   * carrier's report of that end tells how long it talked, and bills it).
   * The carrier's figure (the talk time it reports) always wins: it
   * replaces whatever the run holds, including a duration computed earlier.
   * Without one, the time from answer to end fills a run that has no
   * duration yet, and never replaces one. Each case is one conditional
   * statement, so a computed duration cannot overwrite the carrier's
   * whichever arrives first, even concurrently.
   */
  async fillDuration(runId: number, carrierSeconds?: number): Promise<void> {
    if (carrierSeconds !== undefined) {
      await this.dataSource.query(
        `UPDATE workflow_runs
            SET duration_seconds = $2::double precision,
                cost_info = cost_info || jsonb_build_object('call_duration_seconds', $2::double precision),
                updated_at = now()
          WHERE id = $1 AND ${TALKED_AND_ENDED_SQL}`,
        [runId, Math.max(0, carrierSeconds)],
      );
      return;
    }
    await this.dataSource.query(
      `UPDATE workflow_runs
          SET duration_seconds = GREATEST(0, EXTRACT(EPOCH FROM ended_at - answered_at))::double precision,
              cost_info = cost_info || jsonb_build_object('call_duration_seconds',
                GREATEST(0, EXTRACT(EPOCH FROM ended_at - answered_at))::double precision),
              updated_at = now()
        WHERE id = $1 AND ${TALKED_AND_ENDED_SQL} AND duration_seconds IS NULL
          AND answered_at IS NOT NULL AND ended_at IS NOT NULL`,
      [runId],
    );
  }

  /** Adds to cost_info (a carrier's price can arrive after the call ended). */
  async mergeCostInfo(runId: number, cost: Record<string, unknown>): Promise<void> {
    await this.dataSource.query(`UPDATE workflow_runs SET cost_info = cost_info || $2::jsonb, updated_at = now() WHERE id = $1`, [
      runId,
      JSON.stringify(cost),
    ]);
  }

  /** Merges what the call revealed (answering-machine result, ...) into gathered_context. */
  async mergeGatheredContext(runId: number, data: Record<string, unknown>): Promise<void> {
    await this.dataSource.query(
      `UPDATE workflow_runs SET gathered_context = gathered_context || $2::jsonb, updated_at = now() WHERE id = $1`,
      [runId, JSON.stringify(data)],
    );
  }
}

/**
 * What a transition sets a field's column (`current`, as the statement names it) to from `value`: the first call id
 * a run learns is the one it keeps (an event that names none, sent as '', teaches none); cost details add up from
 * several events; anything else is replaced.
 */
function fieldAssignment(key: keyof RunTransitionFields, current: string, value: string): string {
  if (key === 'providerCallId') return `COALESCE(${current}, NULLIF(${value}, ''))`;
  if (key === 'costInfo') return `${current} || ${value}`;
  return value;
}

/** A copy in run id order, the order grouped writes send their rows in (see `moveMany`). */
function byRunId<T extends { runId: number }>(items: T[]): T[] {
  return [...items].sort((a, b) => a.runId - b.runId);
}

/**
 * Where in `runs` the runs sent to Postgres are: all but a key's later runs
 * in the group, since Postgres refuses a statement that would claim one key
 * twice. Those are left out, as if their key were held, which it is by the
 * time they are told.
 */
function sentPositions(runs: NewRun[]): number[] {
  const positions: number[] = [];
  const keys = new Set<string>();
  runs.forEach((run, position) => {
    if (run.idempotency) {
      // Keys are visible ASCII: a space cannot be part of one.
      const key = `${run.organizationId} ${run.idempotency.key}`;
      if (keys.has(key)) return;
      keys.add(key);
    }
    positions.push(position);
  });
  return positions;
}
