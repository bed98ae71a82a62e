import { ValidateBy, ValidationOptions } from 'class-validator';
import { isStorableText, UNSTORABLE_TEXT_MESSAGE } from './json-values';

/**
 * Text that Postgres stores as sent: it refuses NUL in `text`, and the
 * driver would turn an unpaired surrogate into U+FFFD without a word.
 */
export function StorableText(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'storableText',
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || isStorableText(value),
        defaultMessage: (args) => `${args?.property} ${UNSTORABLE_TEXT_MESSAGE}`,
      },
    },
    options,
  );
}
