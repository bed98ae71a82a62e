import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { FieldProblem, INEXACT_NUMBER_MESSAGE, inexactNumberPath, toE164, validationFailed } from '@app/common';

export const INITIAL_CONTEXT_MAX_BYTES = 64 * 1024;
const CONFIGURATION_ID_MAX = 2_147_483_647;
const FIELDS: ReadonlySet<string> = new Set(['phone_number', 'initial_context', 'telephony_configuration_id']);

/**
 * Body of both trigger endpoints. Unknown fields are rejected.
 *
 * Checked by hand (`parseBody`, which the global validation pipe calls)
 * rather than by class-transformer and class-validator: it runs on every
 * trigger, and through them the pipe took about 21 µs for the bench's
 * ~1 KiB body, against about 8 µs with this (see README "Performance").
 * `trigger-call.dto.spec.ts` holds these rules as
 * class-validator decorators too, and checks that both answer every body
 * alike, messages and their order included.
 */
export class TriggerCallDto {
  @ApiProperty({ example: '+14155552671', description: 'Number to dial, international format with a leading plus.' })
  phone_number: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    example: { user: { name: 'Ada' } },
    description: 'Data for the agent prompt, reachable as {{ initial_context.path }}. At most 64 KiB.',
  })
  initial_context?: Record<string, unknown> | null;

  @ApiPropertyOptional({
    type: 'integer',
    nullable: true,
    minimum: 1,
    maximum: CONFIGURATION_ID_MAX,
    description: "Overrides the organization's default outbound configuration.",
  })
  telephony_configuration_id?: number | null;

  /**
   * The body as the handler gets it: the number normalised to E.164, the
   * context exactly as sent. Throws `validation_failed` listing every
   * offending field: unknown fields first, then the number, the
   * configuration and the context.
   */
  static parseBody(value: unknown): TriggerCallDto {
    // The pipe refuses a body that is not an object before this (an array, a string, a number); no body, or null,
    // reads as {} as it does to class-validator. Called on its own, an array's indexes are unknown fields.
    const body: object = typeof value === 'object' && value !== null ? value : {};
    const problems: FieldProblem[] = [];
    for (const field of Object.keys(body)) {
      if (!FIELDS.has(field)) problems.push({ field, message: `property ${field} should not exist` });
    }
    // A normal form must be its own normal form (remembered where the parse only dropped formatting: no second parse).
    const normalised = toE164(ownValue(body, 'phone_number'));
    if (normalised === null || toE164(normalised) !== normalised) {
      problems.push({ field: 'phone_number', message: PHONE_NUMBER_MESSAGE });
    }
    const configurationId = ownValue(body, 'telephony_configuration_id');
    if (configurationId !== undefined && configurationId !== null) {
      problems.push(...configurationIdProblems(configurationId));
    }
    const context = ownValue(body, 'initial_context');
    if (context !== undefined && context !== null) problems.push(...contextProblems(context));
    if (problems.length > 0) throw validationFailed(problems);

    const parsed = new TriggerCallDto();
    parsed.phone_number = normalised as string;
    parsed.initial_context = context as Record<string, unknown> | null | undefined;
    parsed.telephony_configuration_id = configurationId as number | null | undefined;
    return parsed;
  }
}

export const PHONE_NUMBER_MESSAGE =
  'phone_number must be a possible international number with a leading plus, at most 15 digits and without a carrier selection code, such as +14155552671';

/** An escape for NUL or a lone surrogate, not itself escaped (an even run of backslashes before it). */
const UNSTORABLE_ESCAPE = /(?:^|[^\\])(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i;

/** Own properties only: a body's `__proto__` key is data, and absent fields must not be found on a prototype. */
function ownValue(body: object, field: string): unknown {
  return Object.hasOwn(body, field) ? (body as Record<string, unknown>)[field] : undefined;
}

/** A positive 32-bit integer: Postgres' `integer` id. */
function configurationIdProblems(id: unknown): FieldProblem[] {
  const field = 'telephony_configuration_id';
  const problems: FieldProblem[] = [];
  const isNumber = typeof id === 'number';
  if (!(isNumber && id <= CONFIGURATION_ID_MAX)) {
    problems.push({ field, message: `${field} must not be greater than ${CONFIGURATION_ID_MAX}` });
  }
  if (!(isNumber && id >= 1)) problems.push({ field, message: `${field} must not be less than 1` });
  if (!(isNumber && Number.isInteger(id))) problems.push({ field, message: `${field} must be an integer or null` });
  return problems;
}

/**
 * A JSON object of at most INITIAL_CONTEXT_MAX_BYTES, storable by Postgres'
 * jsonb, which refuses NUL and unpaired UTF-16 surrogates (valid in JSON
 * text), whose numbers are those written (`inexactNumberPath`). One serialisation answers both: JSON.stringify writes exactly those
 * characters as `\u0000` and `\udXXX` escapes, in keys and values alike, and
 * writes no `\u` at all for most contexts, so the pattern rarely runs.
 */
function contextProblems(context: unknown): FieldProblem[] {
  const field = 'initial_context';
  const problems: FieldProblem[] = [];
  const text = JSON.stringify(context);
  if (Buffer.byteLength(text, 'utf8') > INITIAL_CONTEXT_MAX_BYTES) {
    problems.push({ field, message: `${field} must be at most ${INITIAL_CONTEXT_MAX_BYTES} bytes of JSON` });
  } else if (text.includes('\\u') && UNSTORABLE_ESCAPE.test(text)) {
    const message = `${field} must not contain NUL characters or unpaired UTF-16 surrogates, in keys or values`;
    problems.push({ field, message });
  } else {
    const inexact = inexactNumberPath(context, field);
    if (inexact !== undefined) problems.push({ field, message: `${inexact} ${INEXACT_NUMBER_MESSAGE}` });
  }
  if (typeof context !== 'object' || Array.isArray(context)) problems.push({ field, message: `${field} must be a JSON object` });
  return problems;
}

export class TriggerCallResponseDto {
  @ApiProperty({ enum: ['initiated'] })
  status: 'initiated';

  @ApiProperty({ type: 'integer', example: 42 })
  workflow_run_id: number;

  @ApiProperty({ example: 'WR-API-42' })
  workflow_run_name: string;
}
