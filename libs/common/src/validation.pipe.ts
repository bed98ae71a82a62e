import { ArgumentMetadata, ValidationError, ValidationPipe } from '@nestjs/common';
import type { ValidatorOptions } from 'class-validator';
import { DomainError } from './domain-error';
import { Errors } from './errors';

const KEEP_AS_SENT = Symbol('keep-as-sent');
/** Deeper values would overflow the stack of the (recursive) transformer and validator: a 500 instead of a 400. */
const MAX_NESTING_DEPTH = 64;
const BODY_NOT_OBJECT = 'The body must be a JSON object (one request per object: an array is not taken)';

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
    exceptionFactory: (errors) => validationFailed(flatten(errors)),
  });
}

/** One offending field of a request, as listed in a `validation_failed` answer's `details`. */
export interface FieldProblem {
  field: string;
  message: string;
}

/** The `validation_failed` error listing `details`, its message their messages joined. */
export function validationFailed(details: FieldProblem[]): DomainError {
  const message = details.map((detail) => detail.message).join('; ') || 'The request is not valid';
  return Errors.validation(message, details);
}

/**
 * A body class that checks its body and builds itself from it by hand, for a
 * route where class-transformer and class-validator would cost more than the
 * rest of the request (the trigger, see README "Performance"). The pipe calls
 * `parseBody` instead of them, after its nesting check; it answers the body
 * or throws `validationFailed`.
 */
export interface ParsesOwnBody {
  parseBody(value: unknown): unknown;
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
    // Every JSON body, those a handler takes as it came (`unknown`) too: what reads them later (JSON.stringify into a
    // query) would overflow the stack on a body nested thousands deep, and answer 500. A raw body (a Buffer) has none.
    const checked = metadata.type === 'body' ? !ArrayBuffer.isView(value) : Boolean(metatype && this.toValidate(metadata));
    if (checked && nestingDepthExceeds(value, MAX_NESTING_DEPTH)) {
      throw Errors.validation(`The ${metadata.type} is nested more than ${MAX_NESTING_DEPTH} levels deep`);
    }
    // A body class describes an object: an array (a batch of calls, say), a string or a number is refused as a
    // whole, not field by field (an array's indexes read as unknown fields). No body, or null, reads as `{}`.
    if (metadata.type === 'body' && value !== undefined && value !== null && !isPlainObject(value) && metatype && this.toValidate(metadata)) {
      throw Errors.validation(BODY_NOT_OBJECT);
    }
    if (metadata.type === 'body' && parsesOwnBody(metatype)) return metatype.parseBody(value);
    if (!metatype || !this.toValidate(metadata) || !isPlainObject(value)) return super.transform(value, metadata);

    // Top-level keys that stripping or class-transformer would drop silently, so whitelisting never sees them.
    const hidden = Object.keys(value).filter((key) => key === 'prototype' || key in metatype.prototype);
    if (hidden.length > 0) {
      throw validationFailed(hidden.map((field) => ({ field, message: `property ${field} should not exist` })));
    }

    const keep: Array<string | symbol> = Reflect.getMetadata(KEEP_AS_SENT, metatype.prototype) ?? [];
    if (keep.length === 0) return super.transform(value, metadata);

    // Kept properties bypass stripping and class-transformer (which would also walk every nested value):
    // the rest is transformed and validated, the kept ones are validated as sent and put back.
    const rest: Record<string | symbol, unknown> = { ...value };
    const kept = Object.create(metatype.prototype as object) as Record<string | symbol, unknown>;
    for (const property of keep) {
      if (!Object.hasOwn(value, property)) continue;
      kept[property] = value[property as string];
      delete rest[property];
    }
    // The rest's validation leaves the kept properties' rules to the kept half (`validate`).
    const outcome = await super.transform(rest, metadata).then(
      (entity: Record<string | symbol, unknown>) => ({ entity }),
      (error: unknown) => ({ error }),
    );
    // After the rest: the base pipe loads class-validator on its first use. Every rule runs, a required kept
    // property's included when it was not sent; only the kept properties' findings count here.
    const keptErrors = (await super.validate(kept, this.validatorOptions)).filter((error) => keep.includes(error.property));
    const keptProblem = keptErrors.length > 0 ? ((await this.exceptionFactory(keptErrors)) as DomainError) : null;
    if ('error' in outcome) throw keptProblem ? mergeProblems(outcome.error, keptProblem) : outcome.error;
    if (keptProblem) throw keptProblem;
    for (const property of keep) if (Object.hasOwn(kept, property)) outcome.entity[property] = kept[property];
    return outcome.entity;
  }

  /**
   * A body's validation, but for its kept properties, which are judged apart
   * on their values as sent (`transform`). A plain async override: no
   * request-scoped state, so nothing (no async hooks) is added to every request.
   */
  protected override async validate(object: object, options?: ValidatorOptions): Promise<ValidationError[]> {
    const errors = await super.validate(object, options);
    const keep: Array<string | symbol> | undefined = Reflect.getMetadata(KEEP_AS_SENT, Object.getPrototypeOf(object) as object);
    return keep ? errors.filter((error) => !keep.includes(error.property)) : errors;
  }
}

/** One validation error listing the problems of both halves of a body, when both have some. */
function mergeProblems(first: unknown, second: DomainError): unknown {
  if (!(first instanceof DomainError) || !Array.isArray(first.details) || !Array.isArray(second.details)) return first;
  return validationFailed([...(first.details as FieldProblem[]), ...(second.details as FieldProblem[])]);
}

function parsesOwnBody(metatype: unknown): metatype is ParsesOwnBody {
  return typeof metatype === 'function' && typeof (metatype as Partial<ParsesOwnBody>).parseBody === 'function';
}

/**
 * Recursive, but never deeper than `limit` calls, so a hostile value cannot
 * overflow the stack; walks without allocating (a trigger's context is
 * walked on every request).
 */
function nestingDepthExceeds(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (limit <= 0) return true;
  if (Array.isArray(value)) {
    for (const item of value) if (nestingDepthExceeds(item, limit - 1)) return true;
    return false;
  }
  for (const key in value) {
    if (Object.hasOwn(value, key) && nestingDepthExceeds((value as Record<string, unknown>)[key], limit - 1)) return true;
  }
  return false;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function flatten(errors: ValidationError[], parent = ''): FieldProblem[] {
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const own = Object.values(error.constraints ?? {}).map((message) => ({ field, message }));
    return [...own, ...flatten(error.children ?? [], field)];
  });
}
