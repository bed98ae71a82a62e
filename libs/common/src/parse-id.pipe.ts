import { Injectable, PipeTransform } from '@nestjs/common';
import { DomainError } from './domain-error';
import { Errors } from './errors';
import { MAX_ID, parseStoredId } from './parse-stored-id';

/**
 * Parses a numeric path id. Malformed ids are a 400; ids beyond the column
 * range cannot exist, so they answer the same 404 as any unknown id.
 */
@Injectable()
export class ParseIdPipe implements PipeTransform<string, number> {
  /** `max`: the largest id the column holds (`MAX_RUN_ID` for run ids). */
  constructor(
    private readonly notFound: () => DomainError,
    private readonly max: number = MAX_ID,
  ) {}

  transform(value: string): number {
    const id = parseStoredId(value, this.max);
    if (id === 'malformed') throw Errors.validation(`"${value.slice(0, 40)}" is not a valid id: ids are positive integers`);
    if (id === 'out_of_range') throw this.notFound();
    return id;
  }
}
