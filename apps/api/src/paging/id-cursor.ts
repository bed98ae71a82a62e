import { FindOptionsOrder, FindOptionsWhere, LessThan, Repository } from 'typeorm';
import { Errors, MAX_ID } from '@app/common';
import { DEFAULT_PAGE_SIZE, PageQuery } from './page-query';

/**
 * Lists read newest first page by page with a cursor that is the last id of
 * the previous page (the next page holds smaller ids): stable while new rows
 * arrive, and one index range per page however deep the client reads.
 */
export function encodeIdCursor(id: number): string {
  return Buffer.from(String(id)).toString('base64url');
}

/** The id a cursor holds; 400 `validation_failed` for one this API cannot have issued (`maxId`: what the column holds). */
export function decodeIdCursor(cursor: string, maxId: number = MAX_ID): number {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const id = /^[1-9][0-9]{0,15}$/.test(text) ? Number(text) : NaN;
  if (!(id >= 1 && id <= maxId)) throw Errors.validation('cursor is not one this API issued');
  return id;
}

/**
 * A page out of `rows`, read with a limit one larger than the page's so the
 * read tells whether more follow: the page, and the cursor of the next one
 * (null on the last).
 */
export function pageOf<Row extends { id: number }>(rows: Row[], limit: number): { items: Row[]; nextCursor: string | null } {
  const items = rows.slice(0, limit);
  return { items, nextCursor: rows.length > limit ? encodeIdCursor(items[items.length - 1].id) : null };
}

/**
 * One page of an organization's rows (an int4 `id` each), newest first: the
 * rows `where` selects below the query's cursor, `limit` of them (read one
 * more to tell whether more follow).
 */
export async function readPage<Row extends { id: number }>(
  repository: Repository<Row>,
  where: FindOptionsWhere<Row>,
  query: PageQuery,
): Promise<{ items: Row[]; nextCursor: string | null }> {
  const limit = query.limit ?? DEFAULT_PAGE_SIZE;
  const below = query.cursor ? { id: LessThan(decodeIdCursor(query.cursor)) } : {};
  const rows = await repository.find({
    where: { ...where, ...below } as FindOptionsWhere<Row>,
    order: { id: 'DESC' } as FindOptionsOrder<Row>,
    take: limit + 1,
  });
  return pageOf(rows, limit);
}
