import { ApiProperty } from '@nestjs/swagger';
import { WorkflowDefinitionView } from './workflow-definition-view';
import { WorkflowTriggerView } from './workflow-trigger-view';

/** A workflow with its current draft and published definitions and its triggers. */
export class WorkflowView {
  @ApiProperty({ type: 'integer' }) id: number;
  @ApiProperty() name: string;
  @ApiProperty({ type: WorkflowDefinitionView, nullable: true }) draft_definition: WorkflowDefinitionView | null;
  @ApiProperty({ type: WorkflowDefinitionView, nullable: true }) published_definition: WorkflowDefinitionView | null;
  @ApiProperty({
    type: [WorkflowTriggerView],
    description: 'Every trigger ever registered to the workflow, including ones later definitions dropped',
  })
  triggers: WorkflowTriggerView[];
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}
