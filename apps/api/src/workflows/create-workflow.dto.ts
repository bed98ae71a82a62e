import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsNotEmpty, IsString, MaxLength } from 'class-validator';
import { StorableText } from '@app/common';
import { DefinitionProperty } from './definition-property.decorator';

export class CreateWorkflowDto {
  @ApiProperty({ example: 'Appointment reminder', maxLength: 200 })
  @Transform(({ value }) => (typeof value === 'string' ? value.trim() : value))
  @IsString()
  @IsNotEmpty({ message: 'name must not be empty' })
  @MaxLength(200)
  @StorableText()
  name: string;

  @DefinitionProperty()
  definition: Record<string, unknown>;
}
