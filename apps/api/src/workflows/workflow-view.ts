import { ApiProperty } from '@nestjs/swagger';
import { DefinitionVersionView, WorkflowDefinitionView } from './workflow-definition-view';
import { WorkflowTriggerView } from './workflow-trigger-view';
import { CursorPage } from '../paging/cursor-page';

/** What every shape of a workflow holds besides its definitions. */
class WorkflowFields {
  @ApiProperty({ type: 'integer' }) id: number;
  @ApiProperty() name: string;
  @ApiProperty({
    type: [WorkflowTriggerView],
    description:
      'The triggers of its current draft and published definitions. A path both have dropped stays registered to the ' +
      'workflow (no other workflow can take it) but is not listed',
  })
  triggers: WorkflowTriggerView[];
  @ApiProperty({ format: 'date-time' }) created_at: string;
  @ApiProperty({ format: 'date-time' }) updated_at: string;
}

/** A workflow with its current draft and published definitions and its triggers. */
export class WorkflowView extends WorkflowFields {
  @ApiProperty({ type: WorkflowDefinitionView, nullable: true }) draft_definition: WorkflowDefinitionView | null;
  @ApiProperty({ type: WorkflowDefinitionView, nullable: true }) published_definition: WorkflowDefinitionView | null;
}

/** A workflow as the list shows it: which versions are its draft and published definitions, not their graphs. */
export class WorkflowSummaryView extends WorkflowFields {
  @ApiProperty({ type: DefinitionVersionView, nullable: true }) draft_definition: DefinitionVersionView | null;
  @ApiProperty({ type: DefinitionVersionView, nullable: true }) published_definition: DefinitionVersionView | null;
}

export class WorkflowPage extends CursorPage {
  @ApiProperty({ type: [WorkflowSummaryView], description: 'Summaries: read a workflow for its definitions' })
  workflows: WorkflowSummaryView[];
}
