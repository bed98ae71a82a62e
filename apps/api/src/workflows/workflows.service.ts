import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { Errors } from '@app/common';
import { DefinitionGraph, Workflow, WorkflowDefinition } from '@app/persistence';
import { TriggerLookups } from '../triggers/trigger-lookups.service';
import { CreateWorkflowDto } from './create-workflow.dto';
import { DefinitionValidator } from './definition-validator.service';
import { registerTriggers } from './register-triggers';
import { workflowNotFound } from './workflow-not-found.error';
import { WorkflowPresenter } from './workflow-presenter.service';
import { WorkflowView } from './workflow-view';

/**
 * Workflows and their versioned definitions. A stored definition is never
 * rewritten, because runs reference it: replacing the draft archives the old
 * row and inserts the next version; publishing archives the old published
 * one. Both happen under a row lock on the workflow, one writer at a time.
 */
@Injectable()
export class WorkflowsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly validator: DefinitionValidator,
    private readonly presenter: WorkflowPresenter,
    private readonly lookups: TriggerLookups,
  ) {}

  async create(organizationId: number, input: CreateWorkflowDto): Promise<WorkflowView> {
    const graph = this.validator.normalize(input.definition);
    const view = await this.dataSource.transaction(async (manager) => {
      const workflow = await manager.getRepository(Workflow).save({ organizationId, name: input.name });
      await manager
        .getRepository(WorkflowDefinition)
        .save({ workflowId: workflow.id, version: 1, status: 'draft', definition: graph, publishedAt: null });
      await registerTriggers(manager, organizationId, workflow.id, graph);
      return this.presentOne(manager, workflow);
    });
    this.lookups.forgetOrganization(organizationId);
    return view;
  }

  async list(organizationId: number): Promise<WorkflowView[]> {
    const workflows = await this.dataSource.getRepository(Workflow).find({ where: { organizationId }, order: { id: 'DESC' } });
    return this.presenter.present(this.dataSource.manager, workflows);
  }

  async get(organizationId: number, id: number): Promise<WorkflowView> {
    const workflow = await this.dataSource.getRepository(Workflow).findOneBy({ id, organizationId });
    if (!workflow) throw workflowNotFound();
    return this.presentOne(this.dataSource.manager, workflow);
  }

  async saveDraft(organizationId: number, id: number, definition: Record<string, unknown>): Promise<WorkflowView> {
    const graph: DefinitionGraph = this.validator.normalize(definition);
    const view = await this.dataSource.transaction(async (manager) => {
      await this.lockWorkflow(manager, organizationId, id);
      await manager.query(`UPDATE workflow_definitions SET status = 'archived' WHERE workflow_id = $1 AND status = 'draft'`, [id]);
      await manager.query(
        `INSERT INTO workflow_definitions (workflow_id, version, status, definition)
         SELECT $1, COALESCE(MAX(version), 0) + 1, 'draft', $2::jsonb FROM workflow_definitions WHERE workflow_id = $1`,
        [id, JSON.stringify(graph)],
      );
      await registerTriggers(manager, organizationId, id, graph);
      return this.presentOne(manager, await this.touch(manager, id));
    });
    this.lookups.forgetOrganization(organizationId);
    return view;
  }

  async publish(organizationId: number, id: number): Promise<WorkflowView> {
    const view = await this.dataSource.transaction(async (manager) => {
      await this.lockWorkflow(manager, organizationId, id);
      const draft = await manager.getRepository(WorkflowDefinition).findOneBy({ workflowId: id, status: 'draft' });
      if (!draft) throw Errors.conflict('no_draft', 'The workflow has no draft to publish; save one with PUT .../draft');
      // Archive first: the partial unique index allows one published row per workflow at every statement.
      await manager.query(`UPDATE workflow_definitions SET status = 'archived' WHERE workflow_id = $1 AND status = 'published'`, [id]);
      await manager.query(
        `UPDATE workflow_definitions SET status = 'published', published_at = now() WHERE id = $1 AND status = 'draft'`,
        [draft.id],
      );
      return this.presentOne(manager, await this.touch(manager, id));
    });
    this.lookups.forgetOrganization(organizationId);
    return view;
  }

  /** Serialises every definition change of one workflow; also the organization check. */
  private async lockWorkflow(manager: EntityManager, organizationId: number, id: number): Promise<void> {
    const rows: unknown[] = await manager.query('SELECT id FROM workflows WHERE id = $1 AND organization_id = $2 FOR UPDATE', [
      id,
      organizationId,
    ]);
    if (rows.length === 0) throw workflowNotFound();
  }

  private async touch(manager: EntityManager, id: number): Promise<Workflow> {
    await manager.query('UPDATE workflows SET updated_at = now() WHERE id = $1', [id]);
    return manager.getRepository(Workflow).findOneByOrFail({ id });
  }

  private async presentOne(manager: EntityManager, workflow: Workflow): Promise<WorkflowView> {
    const [view] = await this.presenter.present(manager, [workflow]);
    return view;
  }
}
