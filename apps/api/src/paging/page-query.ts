import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';

/** Items on a page when the query does not say. */
export const DEFAULT_PAGE_SIZE = 50;

/** The query of a list read a page at a time, newest first: `limit` items after the previous page's `next_cursor`. */
export class PageQuery {
  @ApiPropertyOptional({ minimum: 1, maximum: 200, default: DEFAULT_PAGE_SIZE })
  @IsOptional()
  // Decimal digits only, as path ids are: `0x10`, `1e2`, `5.0` and ` 5` are not numbers this API writes, and stay
  // strings for IsInt to refuse (Number() would read them as 16, 100 and 5).
  @Transform(({ value }: { value: unknown }) => (typeof value === 'string' && /^[0-9]{1,6}$/.test(value) ? Number(value) : value))
  @IsInt()
  @Min(1)
  @Max(200)
  limit?: number;

  @ApiPropertyOptional({ description: 'next_cursor of the previous page' })
  @IsOptional()
  @IsString()
  @Matches(/^[A-Za-z0-9_-]{1,40}$/, { message: 'cursor is not one this API issued' })
  cursor?: string;
}
