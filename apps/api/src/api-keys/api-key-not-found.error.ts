import { DomainError, Errors } from '@app/common';

export function apiKeyNotFound(): DomainError {
  return Errors.notFound('api_key_not_found', 'No API key with this id belongs to this organization');
}
