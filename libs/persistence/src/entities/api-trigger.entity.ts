import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/** An API Trigger node's UUID, registered when a definition containing it is saved. */
@Entity({ name: 'api_triggers' })
@Index('api_triggers_workflow_idx', ['workflowId'])
export class ApiTrigger {
  @PrimaryColumn({ type: 'uuid' })
  uuid: string;

  @Column({ name: 'organization_id', type: 'integer' })
  organizationId: number;

  @Column({ name: 'workflow_id', type: 'integer' })
  workflowId: number;

  @Column({ name: 'is_active', type: 'boolean', default: true })
  isActive: boolean;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
