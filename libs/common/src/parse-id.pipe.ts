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
    // Digits only (a route parameter is at most 100 characters); leading zeros are the same id.
    const digits = /^\d+$/.test(value) ? value.replace(/^0+/, '') : null;
    if (digits === null || digits === '') {
      throw Errors.validation(`"${value.slice(0, 40)}" is not a valid id: ids are positive integers`);
    }
    if (digits.length > String(MAX_ID).length || Number(digits) > MAX_ID) throw this.notFound();
    return Number(digits);
  }
}
