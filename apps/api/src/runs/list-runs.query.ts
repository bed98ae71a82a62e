import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';
import { RUN_STATUSES, RunStatus } from '@app/persistence';
import { PageQuery } from '../paging/page-query';

export class ListRunsQuery extends PageQuery {
  @ApiPropertyOptional({ enum: RUN_STATUSES })
  @IsOptional()
  @IsIn(RUN_STATUSES as unknown as string[])
  status?: RunStatus;
}
