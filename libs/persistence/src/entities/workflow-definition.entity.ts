import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import { DefinitionGraph } from '../definition-graph';

export type DefinitionStatus = 'draft' | 'published' | 'archived';

/** One version of a workflow's graph; at most one draft and one published per workflow. */
@Entity({ name: 'workflow_definitions' })
@Index('workflow_definitions_version_key', ['workflowId', 'version'], { unique: true })
@Index('workflow_definitions_one_draft', ['workflowId'], { unique: true, where: `status = 'draft'` })
@Index('workflow_definitions_one_published', ['workflowId'], { unique: true, where: `status = 'published'` })
export class WorkflowDefinition {
  @PrimaryGeneratedColumn()
  id: number;

  @Column({ name: 'workflow_id', type: 'integer' })
  workflowId: number;

  @Column({ type: 'integer' })
  version: number;

  @Column({ type: 'text' })
  status: DefinitionStatus;

  @Column({ type: 'jsonb' })
  definition: DefinitionGraph;

  /**
   * The trigger paths `definition` holds, as Postgres keeps them on every
   * write of the graph (migration 1764600000000; filled in for draft and
   * published definitions only). Never written from here, read only when asked for.
   */
  @Column({ name: 'trigger_paths', type: 'jsonb', default: () => `'[]'`, select: false, insert: false, update: false })
  triggerPaths: string[];

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'published_at', type: 'timestamptz', nullable: true })
  publishedAt: Date | null;
}
