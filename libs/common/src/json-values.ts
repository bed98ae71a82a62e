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

/** The path of the first number `isInexactNumber` takes, walking as `firstFound` does. */
function pathOfInexactNumber(value: unknown, path: string): string | undefined {
  return firstFound(value, path, (leaf, at) => (typeof leaf === 'number' && isInexactNumber(leaf) ? at : undefined));
}

/**
 * What in a parsed JSON value would not be stored as it was sent: a string
 * (key or value) Postgres refuses, or a number that is not the one written
 * (`inexactNumberPath`). Answers the first such problem as a sentence that
 * starts with its path, or undefined. Recursive, as `inexactNumberPath`.
 */
export function jsonValueProblem(value: unknown, path: string): string | undefined {
  return firstFound(
    value,
    path,
    (leaf, at) => {
      if (typeof leaf === 'string') return isStorableText(leaf) ? undefined : `${at} ${UNSTORABLE_TEXT_MESSAGE}`;
      return typeof leaf === 'number' && isInexactNumber(leaf) ? `${at} ${INEXACT_NUMBER_MESSAGE}` : undefined;
    },
    (key, at) => (isStorableText(key) ? undefined : `a key of ${at} ${UNSTORABLE_TEXT_MESSAGE}`),
  );
}

/**
 * Walks a parsed JSON value depth first, in order, and answers the first
 * thing `atLeaf` says of a value that is not an array or object (or `atKey`
 * of an object's key, before its value), given its path under `path`.
 */
function firstFound(
  value: unknown,
  path: string,
  atLeaf: (leaf: unknown, path: string) => string | undefined,
  atKey?: (key: string, path: string) => string | undefined,
): string | undefined {
  if (typeof value !== 'object' || value === null) return atLeaf(value, path);
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = firstFound(value[index], `${path}[${index}]`, atLeaf, atKey);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const found = atKey?.(key, path) ?? firstFound((value as Record<string, unknown>)[key], childPath(path, key), atLeaf, atKey);
    if (found !== undefined) return found;
  }
  return undefined;
}

function childPath(path: string, key: string): string {
  return IDENTIFIER.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}
