import { DomainError, Errors } from '@app/common';

export function telephonyConfigurationNotFound(): DomainError {
  return Errors.notFound(
    'telephony_configuration_not_found',
    'No telephony configuration with this id belongs to this organization',
  );
}
