import { ArgumentMetadata, ValidationError, ValidationPipe } from '@nestjs/common';
import { DomainError } from './domain-error';
import { Errors } from './errors';

const KEEP_AS_SENT = Symbol('keep-as-sent');
/** Deeper values would overflow the stack of the (recursive) transformer and validator: a 500 instead of a 400. */
const MAX_NESTING_DEPTH = 64;

/**
 * The one validation pipe: strips nothing silently (unknown fields are a
 * 400), transforms to DTO classes, and answers `validation_failed` with the
 * offending fields listed.
 */
export function createValidationPipe(): ValidationPipe {
  return new StrictValidationPipe({
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

/**
 * Marks a free-form JSON property (such as `initial_context`) that reaches the
 * handler exactly as sent. Without it, Nest's prototype-key stripping drops
 * `constructor` and `prototype` keys at any depth, and class-transformer drops
 * keys named like `Object.prototype` members (`toString`, `valueOf` ...).
 */
export function KeepAsSent(): PropertyDecorator {
  return (target, property) => {
    const properties: Array<string | symbol> = Reflect.getOwnMetadata(KEEP_AS_SENT, target) ?? [];
    Reflect.defineMetadata(KEEP_AS_SENT, [...properties, property], target);
  };
}

class StrictValidationPipe extends ValidationPipe {
  /**
   * Path parameters stay the text that was sent: their own pipes (ParseIdPipe)
   * parse them, and a global `+value` would hand those pipes NaN for "abc".
   */
  protected override transformPrimitive(value: unknown, metadata: ArgumentMetadata): unknown {
    return metadata.type === 'param' ? value : super.transformPrimitive(value, metadata);
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const metatype = metadata.metatype;
    if (metatype && this.toValidate(metadata) && nestingDepthExceeds(value, MAX_NESTING_DEPTH)) {
      throw Errors.validation(`The ${metadata.type} is nested more than ${MAX_NESTING_DEPTH} levels deep`);
    }
    if (!metatype || !this.toValidate(metadata) || !isPlainObject(value)) return super.transform(value, metadata);

    // Top-level keys that stripping or class-transformer would drop silently, so whitelisting never sees them.
    const hidden = Object.keys(value).filter((key) => key === 'prototype' || key in metatype.prototype);
    if (hidden.length > 0) {
      const details = hidden.map((field) => ({ field, message: `property ${field} should not exist` }));
      throw Errors.validation(details.map((detail) => detail.message).join('; '), details);
    }

    const keep: Array<string | symbol> = Reflect.getMetadata(KEEP_AS_SENT, metatype.prototype) ?? [];
    if (keep.length === 0) return super.transform(value, metadata);

    // Kept properties bypass stripping and class-transformer (which would also walk every nested value):
    // the rest is transformed and validated, the kept ones are validated as sent and put back.
    const rest: Record<string | symbol, unknown> = { ...value };
    const originals: Array<readonly [string | symbol, unknown]> = [];
    for (const property of keep) {
      if (!Object.hasOwn(value, property)) continue;
      originals.push([property, value[property as string]]);
      delete rest[property];
    }
    if (originals.length === 0) return super.transform(rest, metadata);
    const kept = Object.create(metatype.prototype as object) as Record<string | symbol, unknown>;
    for (const [property, original] of originals) kept[property] = original;
    // Only the kept properties are present, so only their rules run (the others run on the rest).
    const outcome = await super.transform(rest, metadata).then(
      (entity: Record<string | symbol, unknown>) => ({ entity }),
      (error: unknown) => ({ error }),
    );
    // After the rest: the base pipe loads class-validator on its first use.
    const keptErrors = await this.validate(kept, { ...this.validatorOptions, skipMissingProperties: true });
    const keptProblem = keptErrors.length > 0 ? ((await this.exceptionFactory(keptErrors)) as DomainError) : null;
    if ('error' in outcome) throw keptProblem ? mergeProblems(outcome.error, keptProblem) : outcome.error;
    if (keptProblem) throw keptProblem;
    for (const [property, original] of originals) outcome.entity[property] = original;
    return outcome.entity;
  }
}

/** One validation error listing the problems of both halves of a body, when both have some. */
function mergeProblems(first: unknown, second: DomainError): unknown {
  if (!(first instanceof DomainError) || !Array.isArray(first.details) || !Array.isArray(second.details)) return first;
  const details = [...(first.details as FieldProblem[]), ...(second.details as FieldProblem[])];
  return Errors.validation(details.map((detail) => detail.message).join('; '), details);
}

/** Iterative, so that measuring a hostile value cannot overflow the stack either. */
function nestingDepthExceeds(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (typeof current !== 'object' || current === null) continue;
    if (depth >= limit) return true;
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return false;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
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
