import { DomainError } from '@app/common';

export function invalidDefinition(problem: string): DomainError {
  return new DomainError(400, 'invalid_definition', `The definition is not valid: ${problem}`);
}
