import { ApiProperty } from '@nestjs/swagger';

/** What every page of a list read with a cursor carries besides its items. */
export abstract class CursorPage {
  @ApiProperty({ type: String, nullable: true, description: 'Pass as `cursor` for the next page; null on the last' })
  next_cursor: string | null;
}
