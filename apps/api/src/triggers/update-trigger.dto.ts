import { ApiProperty } from '@nestjs/swagger';
import { IsBoolean } from 'class-validator';

export class UpdateTriggerDto {
  @ApiProperty({ description: 'An inactive trigger answers 404 on both call-initiation URLs.' })
  @IsBoolean({ message: 'is_active must be true or false' })
  is_active: boolean;
}

export class TriggerView {
  @ApiProperty({ format: 'uuid' }) uuid: string;
  @ApiProperty({ type: 'integer' }) workflow_id: number;
  @ApiProperty() is_active: boolean;
}
