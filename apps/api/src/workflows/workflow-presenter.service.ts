import { Injectable } from '@nestjs/common';
import { EntityManager, In } from 'typeorm';
import { DefinitionStatus, Workflow, WorkflowDefinition } from '@app/persistence';
import { DefinitionVersionView, WorkflowDefinitionView } from './workflow-definition-view';
import { WorkflowSummaryView, WorkflowView } from './workflow-view';
import { WorkflowTriggerView } from './workflow-trigger-view';

/** A definition row read without its graph: what a summary needs. */
type VersionRow = Pick<WorkflowDefinition, 'id' | 'workflowId' | 'version' | 'status'>;
const VERSION_COLUMNS = { id: true, workflowId: true, version: true, status: true } as const;

/** Shapes workflows for the API: two queries for any number of workflows. */
@Injectable()
export class WorkflowPresenter {
  /** Workflows with their current definitions, graphs included. */
  present(manager: EntityManager, workflows: Workflow[]): Promise<WorkflowView[]> {
    return this.shape<WorkflowDefinition, WorkflowDefinitionView>(manager, workflows, undefined, (row) => WorkflowDefinitionView.from(row));
  }

  /** Workflows as the list shows them: their current definitions' versions, without the graphs (up to 256 KiB each). */
  summarize(manager: EntityManager, workflows: Workflow[]): Promise<WorkflowSummaryView[]> {
    return this.shape<VersionRow, DefinitionVersionView>(manager, workflows, VERSION_COLUMNS, (row) => DefinitionVersionView.from(row));
  }

  /** `select`: the definition columns to read, all when undefined; `view` shapes a row read with them. */
  private async shape<Row extends VersionRow, Definition>(
    manager: EntityManager,
    workflows: Workflow[],
    select: typeof VERSION_COLUMNS | undefined,
    view: (row: Row) => Definition,
  ): Promise<Array<Omit<WorkflowView, 'draft_definition' | 'published_definition'> & Record<'draft_definition' | 'published_definition', Definition | null>>> {
    if (workflows.length === 0) return [];
    const ids = workflows.map((workflow) => workflow.id);
    // One after the other: the manager may be a transaction's, which runs one query at a time.
    const definitions = (await manager.getRepository(WorkflowDefinition).find({
      select,
      where: { workflowId: In(ids), status: In(['draft', 'published']) },
    })) as unknown as Row[];
    // The triggers of the current draft and published definitions: those its URLs can run. A path a definition
    // since saved no longer holds stays registered to the workflow (so no other can take it), and listing every one
    // ever registered would grow with each save that gave its nodes new paths. Read from the paths Postgres keeps
    // beside each graph (`trigger_paths`), so the list, which reads no graph, has none unpacked either.
    const triggerRows: Array<{ workflow_id: number; uuid: string; is_active: boolean }> = await manager.query(
      `SELECT t.workflow_id, t.uuid, t.is_active
         FROM (SELECT DISTINCT d.workflow_id, path.text::uuid AS uuid
                 FROM workflow_definitions d, jsonb_array_elements_text(d.trigger_paths) AS path(text)
                WHERE d.workflow_id = ANY($1::integer[]) AND d.status IN ('draft', 'published')
                  AND path.text ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$') AS current
         JOIN api_triggers t ON t.uuid = current.uuid AND t.workflow_id = current.workflow_id
        ORDER BY t.created_at, t.uuid`,
      [ids],
    );
    const current = new Map(definitions.map((row) => [`${row.workflowId}:${row.status}`, row]));
    const triggers = new Map<number, WorkflowTriggerView[]>();
    for (const trigger of triggerRows) {
      const list = triggers.get(trigger.workflow_id) ?? [];
      list.push({ uuid: trigger.uuid, is_active: trigger.is_active });
      triggers.set(trigger.workflow_id, list);
    }
    return workflows.map((workflow) => {
      const definition = (status: DefinitionStatus) => {
        const row = current.get(`${workflow.id}:${status}`);
        return row ? view(row) : null;
      };
      return {
        id: workflow.id,
        name: workflow.name,
        draft_definition: definition('draft'),
        published_definition: definition('published'),
        triggers: triggers.get(workflow.id) ?? [],
        created_at: workflow.createdAt.toISOString(),
        updated_at: workflow.updatedAt.toISOString(),
      };
    });
  }
}
