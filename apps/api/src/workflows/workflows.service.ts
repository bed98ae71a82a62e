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
import { WorkflowPage, WorkflowView } from './workflow-view';
import { readPage } from '../paging/id-cursor';
import { PageQuery } from '../paging/page-query';

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
    await this.validator.assertRenders(graph);
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

  /** A page of the organization's workflows, newest first, without their definitions' graphs. */
  async list(organizationId: number, query: PageQuery): Promise<WorkflowPage> {
    const page = await readPage(this.dataSource.getRepository(Workflow), { organizationId }, query);
    return { workflows: await this.presenter.summarize(this.dataSource.manager, page.items), next_cursor: page.nextCursor };
  }

  async get(organizationId: number, id: number): Promise<WorkflowView> {
    const workflow = await this.dataSource.getRepository(Workflow).findOneBy({ id, organizationId });
    if (!workflow) throw workflowNotFound();
    return this.presentOne(this.dataSource.manager, workflow);
  }

  async saveDraft(organizationId: number, id: number, definition: Record<string, unknown>): Promise<WorkflowView> {
    // Another organization's workflow, or none, is not worth a render (up to 250 ms): 404 before the definition is read.
    if (!(await this.dataSource.getRepository(Workflow).existsBy({ id, organizationId }))) throw workflowNotFound();
    let graph: DefinitionGraph = this.validator.normalize(definition);
    await this.validator.assertRenders(graph);
    const view = await this.dataSource.transaction(async (manager) => {
      await this.lockWorkflow(manager, organizationId, id);
      graph = await this.keepTriggerPaths(manager, id, definition, graph);
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

  /** `expectedVersion`: the draft the caller reviewed; another one there by now (saved meanwhile) is not published. */
  async publish(organizationId: number, id: number, expectedVersion?: number): Promise<WorkflowView> {
    const view = await this.dataSource.transaction(async (manager) => {
      await this.lockWorkflow(manager, organizationId, id);
      const draft = await manager.getRepository(WorkflowDefinition).findOneBy({ workflowId: id, status: 'draft' });
      if (!draft) throw Errors.conflict('no_draft', 'The workflow has no draft to publish; save one with PUT .../draft');
      if (expectedVersion !== undefined && draft.version !== expectedVersion) {
        throw Errors.conflict(
          'draft_changed',
          `The draft is version ${draft.version}, not ${expectedVersion}: it was saved again since; read it, then publish that version`,
        );
      }
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
  /**
   * A trigger node saved again without its `trigger_path` keeps the one it
   * has in the workflow's latest draft (else its published definition),
   * matched by node id: re-sending a definition as it was first written must
   * not move the agent to a new URL (and, once published, leave the old one
   * answering 404). A node new to the workflow keeps the fresh path the
   * validator gave it.
   */
  private async keepTriggerPaths(
    manager: EntityManager,
    workflowId: number,
    input: Record<string, unknown>,
    graph: DefinitionGraph,
  ): Promise<DefinitionGraph> {
    const sentWithout = new Set(
      (Array.isArray(input.nodes) ? input.nodes : [])
        .filter((node: { type?: unknown; data?: { trigger_path?: unknown } }) => node?.type === 'trigger' && !node.data?.trigger_path)
        .map((node: { id?: unknown }) => node.id),
    );
    if (sentWithout.size === 0) return graph;
    // Node by node, the draft's path, else the published definition's: a draft that left the node out (or a
    // draft slot emptied by a publish) must not cost the node the path it is published under.
    const latest: Array<{ definition: DefinitionGraph }> = await manager.query(
      `SELECT DISTINCT ON (status) definition FROM workflow_definitions WHERE workflow_id = $1 AND status IN ('draft', 'published')
        ORDER BY status DESC, version DESC`,
      [workflowId],
    );
    // Published, then draft: the draft's path for a node wins.
    const earlier = new Map(
      latest
        .flatMap((row) => row.definition.nodes)
        .filter((node) => node.type === 'trigger' && typeof node.data?.trigger_path === 'string')
        .map((node) => [node.id, node.data.trigger_path as string]),
    );
    const taken = new Set(graph.nodes.filter((node) => !sentWithout.has(node.id)).map((node) => node.data?.trigger_path));
    const nodes = graph.nodes.map((node) => {
      const kept = sentWithout.has(node.id) ? earlier.get(node.id) : undefined;
      if (!kept || taken.has(kept)) return node;
      taken.add(kept);
      return { ...node, data: { ...node.data, trigger_path: kept } };
    });
    return { ...graph, nodes };
  }

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
