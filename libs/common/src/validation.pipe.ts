import { ValidationError, ValidationPipe } from '@nestjs/common';
import { Errors } from './errors';

/**
 * The one validation pipe: strips nothing silently (unknown fields are a
 * 400), transforms to DTO classes, and answers `validation_failed` with the
 * offending fields listed.
 */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    transformOptions: { enableImplicitConversion: false },
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => {
      const details = flatten(errors);
      const message = details.map((detail) => detail.message).join('; ') || 'The request is not valid';
      return Errors.validation(message, details);
    },
  });
}

interface FieldProblem {
  field: string;
  message: string;
}

function flatten(errors: ValidationError[], parent = ''): FieldProblem[] {
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const own = Object.values(error.constraints ?? {}).map((message) => ({ field, message }));
    return [...own, ...flatten(error.children ?? [], field)];
  });
}
