import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, Max, Min } from 'class-validator';

/** The body of a publish, optional as a whole: without it, whatever draft is there when the publish runs is published. */
export class PublishWorkflowDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    description:
      'The draft version the caller reviewed (`draft_definition.version`): published only while the draft is still that version, ' +
      'else 409 `draft_changed` and nothing is published, so a draft saved meanwhile by someone else does not go live unseen',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(2_147_483_647)
  version?: number;
}
