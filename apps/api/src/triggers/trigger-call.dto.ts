import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsObject, IsOptional, Max, Min, ValidateBy, ValidationOptions } from 'class-validator';
import { KeepAsSent, toE164 } from '@app/common';

export const INITIAL_CONTEXT_MAX_BYTES = 64 * 1024;

function IsE164(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isE164',
      validator: {
        validate: (value: unknown) => typeof value === 'string' && toE164(value) === value,
        defaultMessage: () =>
          'phone_number must be a possible international number with a leading plus, such as +14155552671',
      },
    },
    options,
  );
}

/** An escape for NUL or a lone surrogate, not itself escaped (an even run of backslashes before it). */
const UNSTORABLE_ESCAPE = /(?:^|[^\\])(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i;

/**
 * At most `limit` bytes of JSON, and storable by Postgres' jsonb, which
 * refuses NUL and unpaired UTF-16 surrogates (valid in JSON text). One
 * serialisation answers both: JSON.stringify writes exactly those characters
 * as `\u0000` and `\udXXX` escapes, in keys and values alike.
 */
function StorableJson(limit: number, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'storableJson',
      validator: {
        validate: (value: unknown) => {
          const text = JSON.stringify(value ?? null);
          return Buffer.byteLength(text, 'utf8') <= limit && !UNSTORABLE_ESCAPE.test(text);
        },
        defaultMessage: (args) => {
          const text = JSON.stringify(args?.value ?? null);
          return Buffer.byteLength(text, 'utf8') > limit
            ? `${args?.property} must be at most ${limit} bytes of JSON`
            : `${args?.property} must not contain NUL characters or unpaired UTF-16 surrogates, in keys or values`;
        },
      },
    },
    options,
  );
}

/** Body of both trigger endpoints. Unknown fields are rejected. */
export class TriggerCallDto {
  @ApiProperty({ example: '+14155552671', description: 'Number to dial, international format with a leading plus.' })
  @Transform(({ value }) => toE164(value) ?? value)
  @IsE164()
  phone_number: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    example: { user: { name: 'Ada' } },
    description: 'Data for the agent prompt, reachable as {{ initial_context.path }}. At most 64 KiB.',
  })
  @KeepAsSent()
  @IsOptional()
  @IsObject({ message: 'initial_context must be a JSON object' })
  @StorableJson(INITIAL_CONTEXT_MAX_BYTES)
  initial_context?: Record<string, unknown> | null;

  @ApiPropertyOptional({ type: 'integer', nullable: true, description: "Overrides the organization's default outbound configuration." })
  @IsOptional()
  @IsInt({ message: 'telephony_configuration_id must be an integer or null' })
  @Min(1)
  @Max(2_147_483_647)
  telephony_configuration_id?: number | null;
}

export class TriggerCallResponseDto {
  @ApiProperty({ example: 'initiated' })
  status: 'initiated';

  @ApiProperty({ example: 42 })
  workflow_run_id: number;

  @ApiProperty({ example: 'WR-API-42' })
  workflow_run_name: string;
}
