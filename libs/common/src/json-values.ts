/** Half of a UTF-16 surrogate pair without its other half. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

export const INEXACT_NUMBER_MESSAGE =
  'is a number JSON does not carry exactly (beyond ±9007199254740991, or out of range): send it as a string';
export const UNSTORABLE_TEXT_MESSAGE = 'must not contain NUL characters or unpaired UTF-16 surrogates';

/** Text Postgres stores as sent: it refuses NUL, and unpaired surrogates in JSON. */
export function isStorableText(text: string): boolean {
  return !text.includes('\0') && !LONE_SURROGATE.test(text);
}

/**
 * A number that reached us other than it was written: the JSON parser reads
 * `1e400` as Infinity (which JSON.stringify then writes as null) and
 * `12345678901234567890` as 12345678901234567000. Every number past
 * ±(2^53 − 1) is refused, since the parsed value cannot tell which lost
 * digits (past it every double is an integer, and only some are exact).
 */
export function isInexactNumber(value: number): boolean {
  return !Number.isFinite(value) || (Number.isInteger(value) && !Number.isSafeInteger(value));
}

/**
 * The path (`data.items[2].id`, under `path`) of the first number in a
 * parsed JSON value that `isInexactNumber`, or undefined. Recursive: call it
 * on values the validation pipe has held to its nesting limit. A value
 * without one (nearly every trigger's context) is walked without allocating;
 * the path is spelled out only for one that has.
 */
export function inexactNumberPath(value: unknown, path: string): string | undefined {
  return holdsInexactNumber(value) ? pathOfInexactNumber(value, path) : undefined;
}

function holdsInexactNumber(value: unknown): boolean {
  if (typeof value === 'number') return isInexactNumber(value);
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value)) {
    for (const item of value) if (holdsInexactNumber(item)) return true;
    return false;
  }
  for (const key in value) {
    if (Object.hasOwn(value, key) && holdsInexactNumber((value as Record<string, unknown>)[key])) return true;
  }
  return false;
}

function pathOfInexactNumber(value: unknown, path: string): string | undefined {
  if (typeof value === 'number') return isInexactNumber(value) ? path : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = pathOfInexactNumber(value[index], `${path}[${index}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const found = pathOfInexactNumber((value as Record<string, unknown>)[key], childPath(path, key));
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * What in a parsed JSON value would not be stored as it was sent: a string
 * (key or value) Postgres refuses, or a number that is not the one written
 * (`inexactNumberPath`). Answers the first such problem as a sentence that
 * starts with its path, or undefined. Recursive, as `inexactNumberPath`.
 */
export function jsonValueProblem(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return isStorableText(value) ? undefined : `${path} ${UNSTORABLE_TEXT_MESSAGE}`;
  if (typeof value === 'number') return isInexactNumber(value) ? `${path} ${INEXACT_NUMBER_MESSAGE}` : undefined;
  if (typeof value !== 'object' || value === null) return undefined;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = jsonValueProblem(value[index], `${path}[${index}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (!isStorableText(key)) return `a key of ${path} ${UNSTORABLE_TEXT_MESSAGE}`;
    const found = jsonValueProblem((value as Record<string, unknown>)[key], childPath(path, key));
    if (found !== undefined) return found;
  }
  return undefined;
}

function childPath(path: string, key: string): string {
  return IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}
