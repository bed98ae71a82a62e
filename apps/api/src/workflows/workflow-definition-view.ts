import { ApiProperty } from '@nestjs/swagger';
import { DefinitionGraph, DefinitionStatus, WorkflowDefinition } from '@app/persistence';

/** Which stored version of a workflow's graph, without the graph: what the workflow list shows. */
export class DefinitionVersionView {
  @ApiProperty({ type: 'integer' }) id: number;
  @ApiProperty({ type: 'integer' }) version: number;
  @ApiProperty({ enum: ['draft', 'published', 'archived'] }) status: DefinitionStatus;

  static from(row: Pick<WorkflowDefinition, 'id' | 'version' | 'status'>): DefinitionVersionView {
    return { id: row.id, version: row.version, status: row.status };
  }
}

/** One stored version of a workflow's graph. */
export class WorkflowDefinitionView extends DefinitionVersionView {
  @ApiProperty({ type: 'object', additionalProperties: true, description: '`{nodes: [{id, type, data}], edges: [{source, target}]}`' })
  definition: DefinitionGraph;

  static override from(row: WorkflowDefinition): WorkflowDefinitionView {
    return { ...DefinitionVersionView.from(row), definition: row.definition };
  }
}
