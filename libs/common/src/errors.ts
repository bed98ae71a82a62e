import { DomainError } from './domain-error';

/** Constructors for the domain errors the API answers with, one stable code each. */
export const Errors = {
  unauthorized: (message = 'A valid API key is required in X-API-Key or Authorization: Bearer') =>
    new DomainError(401, 'unauthorized', message),
  forbidden: (message = 'This API key has no access to this resource') => new DomainError(403, 'forbidden', message),
  notFound: (code: string, message: string) => new DomainError(404, code, message),
  validation: (message: string, details?: unknown) => new DomainError(400, 'validation_failed', message, details),
  conflict: (code: string, message: string) => new DomainError(409, code, message),
  telephonyNotConfigured: (message: string) => new DomainError(400, 'telephony_not_configured', message),
  serviceUnavailable: (message: string) => new DomainError(503, 'service_unavailable', message),
} as const;
