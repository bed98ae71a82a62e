import { Injectable } from '@nestjs/common';
import { EntityManager, In } from 'typeorm';
import { ApiTrigger, DefinitionStatus, Workflow, WorkflowDefinition } from '@app/persistence';
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
    const triggerRows = await manager.getRepository(ApiTrigger).find({ where: { workflowId: In(ids) }, order: { createdAt: 'ASC', uuid: 'ASC' } });
    const current = new Map(definitions.map((row) => [`${row.workflowId}:${row.status}`, row]));
    const triggers = new Map<number, WorkflowTriggerView[]>();
    for (const trigger of triggerRows) {
      const list = triggers.get(trigger.workflowId) ?? [];
      list.push({ uuid: trigger.uuid, is_active: trigger.isActive });
      triggers.set(trigger.workflowId, list);
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
