import { ValidateBy, ValidationOptions } from 'class-validator';

/** Half of a UTF-16 surrogate pair without its other half. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Text that Postgres stores as sent: it refuses NUL in `text`, and the
 * driver would turn an unpaired surrogate into U+FFFD without a word.
 */
export function StorableText(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'storableText',
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || (!value.includes('\0') && !LONE_SURROGATE.test(value)),
        defaultMessage: (args) => `${args?.property} must not contain NUL characters or unpaired UTF-16 surrogates`,
      },
    },
    options,
  );
}
