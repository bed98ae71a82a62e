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

function MaxJsonBytes(limit: number, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'maxJsonBytes',
      validator: {
        validate: (value: unknown) => Buffer.byteLength(JSON.stringify(value ?? null), 'utf8') <= limit,
        defaultMessage: (args) => `${args?.property} must be at most ${limit} bytes of JSON`,
      },
    },
    options,
  );
}

/** NUL and unpaired surrogates are valid JSON text that Postgres' jsonb refuses to store. */
const UNPAIRED_SURROGATE = /\p{Cs}/u;

function isUnstorable(text: string): boolean {
  return text.includes('\u0000') || UNPAIRED_SURROGATE.test(text);
}

function StorableJson(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'storableJson',
      validator: {
        validate: (value: unknown) => !holdsUnstorableText(value),
        defaultMessage: (args) =>
          `${args?.property} must not contain NUL characters or unpaired UTF-16 surrogates, in keys or values`,
      },
    },
    options,
  );
}

function holdsUnstorableText(value: unknown): boolean {
  const stack = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current === 'string') {
      if (isUnstorable(current)) return true;
    } else if (typeof current === 'object' && current !== null) {
      for (const [key, child] of Object.entries(current)) {
        if (isUnstorable(key)) return true;
        stack.push(child);
      }
    }
  }
  return false;
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
  @MaxJsonBytes(INITIAL_CONTEXT_MAX_BYTES)
  @StorableJson()
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
