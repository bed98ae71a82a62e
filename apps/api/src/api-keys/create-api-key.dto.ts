import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
} from 'class-validator';
import { StorableText } from '@app/common';
import { API_KEY_ROLES, ApiKeyRole } from '@app/persistence';

const MAX_KEY_WORKFLOWS = 1000;

export class CreateApiKeyDto {
  @ApiProperty({ example: 'CRM integration', maxLength: 200 })
  @Transform(({ value }) => (typeof value === 'string' ? value.trim() : value))
  @IsString()
  @IsNotEmpty({ message: 'name must not be empty' })
  @MaxLength(200)
  @StorableText()
  name: string;

  @ApiProperty({
    enum: API_KEY_ROLES,
    description: '`admin` reaches the management API and every workflow; `trigger` starts calls and reads runs.',
  })
  @IsIn(API_KEY_ROLES as unknown as string[])
  role: ApiKeyRole;

  @ApiPropertyOptional({
    type: 'integer',
    isArray: true,
    description:
      'For `trigger` keys: the only workflows the key may reach (omit for every workflow). ' +
      'Each must be a workflow of the organization (404 `workflow_not_found` otherwise). Not accepted for `admin` keys.',
  })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1, { message: 'workflow_ids must list at least one workflow; omit it to allow every workflow' })
  @ArrayMaxSize(MAX_KEY_WORKFLOWS)
  @IsInt({ each: true, message: 'workflow_ids must contain integer ids' })
  @Min(1, { each: true, message: 'workflow_ids must contain positive ids' })
  @Max(2_147_483_647, { each: true, message: 'workflow_ids must contain valid ids' })
  workflow_ids?: number[] | null;
}
