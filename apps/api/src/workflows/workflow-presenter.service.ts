import { Injectable } from '@nestjs/common';
import { EntityManager, In } from 'typeorm';
import { ApiTrigger, Workflow, WorkflowDefinition } from '@app/persistence';
import { WorkflowDefinitionView } from './workflow-definition-view';
import { WorkflowView } from './workflow-view';

/** Shapes workflows for the API: two queries for any number of workflows. */
@Injectable()
export class WorkflowPresenter {
  async present(manager: EntityManager, workflows: Workflow[]): Promise<WorkflowView[]> {
    if (workflows.length === 0) return [];
    const ids = workflows.map((workflow) => workflow.id);
    // One after the other: the manager may be a transaction's, which runs one query at a time.
    const definitions = await manager
      .getRepository(WorkflowDefinition)
      .findBy({ workflowId: In(ids), status: In(['draft', 'published']) });
    const triggers = await manager
      .getRepository(ApiTrigger)
      .find({ where: { workflowId: In(ids) }, order: { createdAt: 'ASC', uuid: 'ASC' } });
    return workflows.map((workflow) => {
      const current = (status: 'draft' | 'published') => {
        const row = definitions.find((definition) => definition.workflowId === workflow.id && definition.status === status);
        return row ? WorkflowDefinitionView.from(row) : null;
      };
      return {
        id: workflow.id,
        name: workflow.name,
        draft_definition: current('draft'),
        published_definition: current('published'),
        triggers: triggers
          .filter((trigger) => trigger.workflowId === workflow.id)
          .map((trigger) => ({ uuid: trigger.uuid, is_active: trigger.isActive })),
        created_at: workflow.createdAt.toISOString(),
        updated_at: workflow.updatedAt.toISOString(),
      };
    });
  }
}
