import { ApiProperty } from '@nestjs/swagger';
import { DefinitionGraph, DefinitionStatus, WorkflowDefinition } from '@app/persistence';

/** One stored version of a workflow's graph. */
export class WorkflowDefinitionView {
  @ApiProperty({ type: 'integer' }) id: number;
  @ApiProperty({ type: 'integer' }) version: number;
  @ApiProperty({ enum: ['draft', 'published', 'archived'] }) status: DefinitionStatus;
  @ApiProperty({ type: 'object', additionalProperties: true, description: '`{nodes: [{id, type, data}], edges: [{source, target}]}`' })
  definition: DefinitionGraph;

  static from(row: WorkflowDefinition): WorkflowDefinitionView {
    return { id: row.id, version: row.version, status: row.status, definition: row.definition };
  }
}
