import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Batcher } from '@app/common';
import { preparedQuery, RunStatus } from '@app/persistence';

/**
 * A run read in the shape the API writes it. The free-form JSON columns
 * (initial_context, gathered_context, logs, annotations) come as Postgres'
 * own JSON text, to be spliced into the answer as they are: parsed by the
 * driver, they were turned back into the same text on every poll. Times
 * come as ISO 8601 text, as `Date.toISOString` writes them.
 */
export interface RunRecordRow {
  id: number;
  organization_id: number;
  workflow_id: number;
  name: string;
  provider: string | null;
  created_at: string;
  is_completed: boolean;
  has_transcript: boolean;
  has_recording: boolean;
  cost_info: Record<string, unknown>;
  definition_id: number | null;
  call_type: string;
  initial_context: string;
  gathered_context: string;
  logs: string;
  annotations: string;
  status: RunStatus;
  environment: string;
  phone_number: string;
  from_number: string | null;
  telephony_configuration_id: number | null;
  provider_call_id: string | null;
  duration_seconds: number | null;
  answered_at: string | null;
  ended_at: string | null;
  end_reason: string | null;
  trigger_uuid: string | null;
  updated_at: string;
}

/** The run's free-form JSON documents: each can be megabytes (an agent's gathered context up to AGENT_DATA_LIMITS). */
export type RunDocumentField = 'initial_context' | 'gathered_context' | 'logs' | 'annotations';

/** A run as the list shows it: the record without its free-form documents. */
export type RunSummaryRow = Omit<RunRecordRow, RunDocumentField>;

export interface RunListFilter {
  workflowId: number;
  organizationId: number;
  status?: RunStatus;
  /** Only runs with a smaller id (the cursor of the previous page). */
  beforeId?: number;
  limit: number;
}

/** `Date.toISOString`'s form (milliseconds, truncated as a JavaScript Date holds them), written by Postgres. */
function iso(column: string): string {
  return `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ${column}`;
}

/**
 * Only what a record shows: the agent's transcript, the carrier's recording
 * URL and the artifact keys stay in the database (a key only says whether a
 * link is minted).
 */
const SUMMARY_COLUMNS = [
  'id',
  'organization_id',
  'workflow_id',
  'name',
  'provider',
  iso('created_at'),
  'is_completed',
  `COALESCE(transcript_key, '') <> '' AS has_transcript`,
  `COALESCE(recording_key, '') <> '' AS has_recording`,
  'cost_info',
  'definition_id',
  'call_type',
  'status',
  'environment',
  'phone_number',
  'from_number',
  'telephony_configuration_id',
  'provider_call_id',
  'duration_seconds',
  iso('answered_at'),
  iso('ended_at'),
  'end_reason',
  'trigger_uuid',
  iso('updated_at'),
];
const SUMMARY_SELECT = SUMMARY_COLUMNS.join(', ');
const RECORD_SELECT = [
  ...SUMMARY_COLUMNS,
  'initial_context::text AS initial_context',
  'gathered_context::text AS gathered_context',
  'logs::text AS logs',
  'annotations::text AS annotations',
].join(', ');

/** Where a run is asked for: the id, and the organization and workflow it must belong to. */
export interface RunAddress {
  runId: number;
  organizationId: number;
  workflowId: number;
}

/**
 * Reads run records for the API. Single reads (dashboards polling one run
 * each) that arrive together leave as one query; nothing is cached.
 */
@Injectable()
export class RunRecords {
  private readonly byAddress = new Batcher<RunAddress, RunRecordRow | null>(
    async (asked) => {
      // Filtered on the owners asked for as well as the ids, so another organization's run is not read for a 404
      // (its documents are megabytes cast to text, and the 404's time would follow their size) unless its own
      // organization reads that workflow in the same batch. The exact match is made here; a join on the three
      // arrays was exact in SQL too, but Postgres planned it anew on every read (tens of µs of its CPU a query).
      const rows = await preparedQuery<RunRecordRow>(
        this.dataSource,
        `SELECT ${RECORD_SELECT} FROM workflow_runs
          WHERE id = ANY($1::bigint[]) AND ((organization_id::bigint << 32) | workflow_id) = ANY($2::bigint[])`,
        [[...new Set(asked.map((address) => address.runId))], [...new Set(asked.map(ownerKey))]],
      );
      const found = new Map(rows.map((row) => [row.id, row]));
      return asked.map((address) => {
        const row = found.get(address.runId);
        return row && row.organization_id === address.organizationId && row.workflow_id === address.workflowId ? row : null;
      });
    },
    { maxBatch: 500, maxInFlight: 4 },
  );

  constructor(private readonly dataSource: DataSource) {}

  /** The run's record, or null when no run has the id in that organization and workflow. */
  findVisible(address: RunAddress): Promise<RunRecordRow | null> {
    return this.byAddress.submit(address);
  }

  /** Whether the workflow is the organization's: asked only when its run list comes back empty. */
  async isWorkflowOf(organizationId: number, workflowId: number): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(`SELECT 1 FROM workflows WHERE id = $1 AND organization_id = $2`, [
      workflowId,
      organizationId,
    ]);
    return rows.length > 0;
  }

  /**
   * A workflow's runs of one organization, newest first, as summaries. A
   * page of full records was up to 200 runs of megabytes each: one request
   * could hold a gigabyte in the gateway, and a few at once exhaust its heap.
   */
  list(filter: RunListFilter): Promise<RunSummaryRow[]> {
    // The workflow's owner first, once (Postgres runs an uncorrelated EXISTS as a one-time filter): another
    // organization's workflow is not scanned, run by run, to find none of its runs visible, which would take
    // time growing with its runs (telling how many it has) and hold a connection while it did.
    const conditions = [
      'EXISTS (SELECT 1 FROM workflows WHERE workflows.id = $1 AND workflows.organization_id = $2)',
      'workflow_id = $1',
      'organization_id = $2',
    ];
    const values: unknown[] = [filter.workflowId, filter.organizationId];
    if (filter.status !== undefined) {
      values.push(filter.status);
      conditions.push(`status = $${values.length}`);
    }
    if (filter.beforeId !== undefined) {
      values.push(filter.beforeId);
      conditions.push(`id < $${values.length}`);
    }
    values.push(filter.limit);
    return this.dataSource.query(
      `SELECT ${SUMMARY_SELECT} FROM workflow_runs WHERE ${conditions.join(' AND ')} ORDER BY id DESC LIMIT $${values.length}`,
      values,
    );
  }
}

/** An organization and one of its workflows as one number, as the read's statement computes it from a row. */
function ownerKey(address: RunAddress): string {
  return ((BigInt(address.organizationId) << 32n) | BigInt(address.workflowId)).toString();
}
