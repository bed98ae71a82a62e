import { Injectable, PipeTransform } from '@nestjs/common';
import { DomainError } from './domain-error';
import { Errors } from './errors';

const MAX_ID = 2_147_483_647;

/**
 * Parses a numeric path id. Malformed ids are a 400; ids beyond the column
 * range cannot exist, so they answer the same 404 as any unknown id.
 */
@Injectable()
export class ParseIdPipe implements PipeTransform<string, number> {
  constructor(private readonly notFound: () => DomainError) {}

  transform(value: string): number {
    if (!/^\d{1,12}$/.test(value) || Number(value) < 1) {
      throw Errors.validation(`"${value.slice(0, 40)}" is not a valid id: ids are positive integers`);
    }
    const id = Number(value);
    if (id > MAX_ID) throw this.notFound();
    return id;
  }
}
