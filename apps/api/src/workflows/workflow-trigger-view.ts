import { ApiProperty } from '@nestjs/swagger';

/** An API trigger registered to a workflow. */
export class WorkflowTriggerView {
  @ApiProperty({ format: 'uuid' }) uuid: string;
  @ApiProperty() is_active: boolean;
}
