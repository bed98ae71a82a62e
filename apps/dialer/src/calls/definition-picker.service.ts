import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Batcher } from '@app/common';
import { DefinitionStatus, preparedQuery, WorkflowDefinition, WorkflowRun, triggerPathsOf } from '@app/persistence';

type DefinitionRow = Record<string, unknown>;

/** Named, not `*`: a prepared `SELECT *` fails once a migration adds a column (see RUN_COLUMNS). */
const DEFINITION_SELECT = 'id, workflow_id, version, status, definition, created_at, published_at';

const GROUPING = { maxBatch: 500, maxInFlight: 4 };

/**
 * Chooses the definition a run executes: a test run takes the latest draft
 * when there is one, else the published version; a production run takes the
 * published version. The definition must still contain the run's trigger.
 * This runs for every call: the look-ups that arrive together leave as one
 * query. Nothing is cached: a draft is edited in place.
 */
@Injectable()
export class DefinitionPicker {
  /** A workflow's draft and published definitions. */
  private readonly candidates = new Batcher<number, WorkflowDefinition[]>(
    async (workflowIds) => {
      const rows = await preparedQuery<DefinitionRow>(
        this.dataSource,
        `SELECT ${DEFINITION_SELECT} FROM workflow_definitions WHERE workflow_id = ANY($1::integer[]) AND status IN ('draft', 'published')`,
        [[...new Set(workflowIds)]],
      );
      const definitions = rows.map(definitionFromRow);
      return workflowIds.map((workflowId) => definitions.filter((definition) => definition.workflowId === workflowId));
    },
    GROUPING,
  );

  private readonly byIds = new Batcher<number, WorkflowDefinition | null>(async (ids) => {
    const rows: DefinitionRow[] = await this.dataSource.query(`SELECT ${DEFINITION_SELECT} FROM workflow_definitions WHERE id = ANY($1::integer[])`, [
      [...new Set(ids)],
    ]);
    const byId = new Map(rows.map((row) => [row.id as number, definitionFromRow(row)]));
    return ids.map((id) => byId.get(id) ?? null);
  }, GROUPING);

  constructor(private readonly dataSource: DataSource) {}

  async pick(run: Pick<WorkflowRun, 'environment' | 'workflowId' | 'triggerUuid'>): Promise<WorkflowDefinition | null> {
    const statuses: DefinitionStatus[] = run.environment === 'test' ? ['draft', 'published'] : ['published'];
    const candidates = await this.candidates.submit(run.workflowId);
    const chosen =
      candidates.find((definition) => definition.status === statuses[0]) ??
      candidates.find((definition) => definition.status === statuses[1]) ??
      null;
    if (!chosen) return null;
    if (run.triggerUuid && !triggerPathsOf(chosen.definition).includes(run.triggerUuid)) return null;
    return chosen;
  }

  /** The definition a run was dialed with. */
  async byId(id: number | null): Promise<WorkflowDefinition | null> {
    return id === null ? null : this.byIds.submit(id);
  }
}

function definitionFromRow(row: DefinitionRow): WorkflowDefinition {
  return Object.assign(new WorkflowDefinition(), {
    id: row.id,
    workflowId: row.workflow_id,
    version: row.version,
    status: row.status,
    definition: row.definition,
    createdAt: new Date(row.created_at as string),
    publishedAt: row.published_at === null ? null : new Date(row.published_at as string),
  });
}
