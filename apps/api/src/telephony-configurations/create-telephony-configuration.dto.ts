import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsDefined,
  IsInt,
  IsNotEmpty,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  ValidateBy,
  ValidateIf,
  ValidationOptions,
} from 'class-validator';
import { KeepAsSent, StorableText, toE164 } from '@app/common';
import { MIN_CALLS_PER_SECOND, PROVIDER_NAMES } from '@app/telephony';

const MAX_FROM_NUMBERS = 100;
const MAX_JSON_BYTES = 16 * 1024;

/** Optional, but not nullable: null is a 400 rather than a NULL the column refuses. */
const OptionalNotNull = () => ValidateIf((_: object, value: unknown) => value !== undefined);

function AllE164(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'allE164',
      validator: {
        // Too many is ArrayMaxSize's to say, before any is parsed (see `normaliseNumbers`).
        validate: (value: unknown) => Array.isArray(value) && (value.length > MAX_FROM_NUMBERS || value.every((number) => toE164(number) === number)),
        defaultMessage: (args) => {
          const bad = Array.isArray(args?.value) ? args.value.filter((number: unknown) => toE164(number) !== number) : [];
          return `from_numbers must hold possible international numbers with a leading plus; not: ${bad
            .slice(0, 5)
            .map((number: unknown) => JSON.stringify(number))
            .join(', ')}`;
        },
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

/**
 * Normalises each number to E.164 and drops duplicates; what cannot be
 * normalised is left for the validator to name. A list of more than twice
 * the numbers allowed, once exact repeats are dropped, is refused as it is,
 * none of it parsed: a megabyte of numbers would otherwise hold the
 * gateway's event loop for seconds of parsing, only to be refused. (Up to
 * that, one number written two ways still counts once.)
 */
function normaliseNumbers({ value }: { value: unknown }): unknown {
  if (!Array.isArray(value)) return value;
  const distinct = [...new Set(value)];
  if (distinct.length > 2 * MAX_FROM_NUMBERS) return distinct;
  return [...new Set(distinct.map((number: unknown) => toE164(number) ?? number))];
}

export class CreateTelephonyConfigurationDto {
  @ApiProperty({ example: 'Main carrier account', maxLength: 200 })
  @Transform(({ value }) => (typeof value === 'string' ? value.trim() : value))
  @IsString()
  @IsNotEmpty({ message: 'name must not be empty' })
  @MaxLength(200)
  @StorableText()
  name: string;

  @ApiProperty({ enum: PROVIDER_NAMES, example: 'sandbox', description: 'The carrier: `sandbox` (built in, places no real calls) or a real one.' })
  @IsString()
  @MaxLength(50)
  provider: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    nullable: true,
    description: "The provider's account credentials, checked by the provider. Stored encrypted and never returned.",
  })
  // As sent, so that a key named like an Object.prototype member reaches the provider's check (and is refused there)
  // instead of being dropped on the way in.
  @KeepAsSent()
  @IsOptional()
  @IsObject({ message: 'credentials must be a JSON object or null' })
  @MaxJsonBytes(MAX_JSON_BYTES)
  credentials?: Record<string, unknown> | null;

  @ApiProperty({
    type: [String],
    example: ['+15005550006'],
    description: 'Caller ids to dial from, normalised to E.164. Without one, calls through this configuration answer 400.',
  })
  @Transform(normaliseNumbers)
  @IsArray({ message: 'from_numbers must be an array of phone numbers' })
  @ArrayMaxSize(MAX_FROM_NUMBERS)
  @AllE164()
  from_numbers: string[];

  @ApiPropertyOptional({
    description:
      'The configuration calls use when the trigger names none; at most one per organization, so setting it ' +
      'clears it on the others. The first configuration of an organization becomes the default unless this is false. ' +
      'Unsetting or deleting the default leaves the organization without one: triggers that name no ' +
      'configuration then answer 400 `telephony_not_configured`.',
  })
  @OptionalNotNull()
  @IsBoolean()
  is_default_outbound?: boolean;

  @ApiPropertyOptional({ minimum: MIN_CALLS_PER_SECOND, maximum: 10_000, default: 1 })
  @OptionalNotNull()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(MIN_CALLS_PER_SECOND, {
    message: `calls_per_second must be at least ${MIN_CALLS_PER_SECOND} (one call every ${1 / MIN_CALLS_PER_SECOND} seconds)`,
  })
  @Max(10_000)
  calls_per_second?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 10_000, default: 10 })
  @OptionalNotNull()
  @IsInt()
  @Min(1)
  @Max(10_000)
  max_concurrent_calls?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 10, maximum: 14_400, default: 3600 })
  @OptionalNotNull()
  @IsInt()
  @Min(10)
  @Max(14_400)
  max_call_duration_seconds?: number;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    example: { ring_ms: 1000, talk_ms: 4000 },
    description: 'Provider settings, checked by the provider (sandbox: `ring_ms`, `talk_ms`).',
  })
  // As sent, as credentials are. Absent, it is not checked (OptionalNotNull); null, IsDefined refuses it.
  @KeepAsSent()
  @OptionalNotNull()
  @IsDefined({ message: 'settings must be a JSON object' })
  @IsObject({ message: 'settings must be a JSON object' })
  @MaxJsonBytes(MAX_JSON_BYTES)
  settings?: Record<string, unknown>;
}
