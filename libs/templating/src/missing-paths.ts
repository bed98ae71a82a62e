import { Liquid } from 'liquidjs';

/** The variable paths a template reads, as Liquid's static analysis answers them. */
export type VariablePaths = ReturnType<Liquid['globalVariableSegmentsSync']>;

type Read = { found: true; value: unknown } | { found: false };

const NOT_FOUND: Read = { found: false };

/**
 * The dotted paths among `variables` that `data` does not have: those Liquid
 * renders empty for want of a value. A computed segment (`a[b]`) ends what
 * can be checked statically.
 */
export function missingPaths(variables: VariablePaths, data: Record<string, unknown>): string[] {
  const missing = new Set<string>();
  for (const segments of variables) {
    const computed = segments.findIndex((s) => typeof s !== 'string' && typeof s !== 'number');
    const checkable = (computed === -1 ? segments : segments.slice(0, computed)) as Array<string | number>;
    let value: unknown = data;
    for (const segment of checkable) {
      const read = readProperty(value, segment);
      if (!read.found) {
        missing.add(checkable.join('.'));
        break;
      }
      value = read.value;
    }
  }
  return [...missing];
}

/**
 * `value[key]` as Liquid reads it with `ownPropertyOnly` (its Context's
 * `readProperty`, for JSON data): an own property (a string's `length` and
 * characters included), and besides it an array's items counted from its end
 * (`items[-1]`), `first` and `last` of an array, and `size` of an array or a
 * string (its length) or of an object (its keys).
 */
function readProperty(value: unknown, key: string | number): Read {
  if (value === null || value === undefined) return NOT_FOUND;
  if (Array.isArray(value)) {
    if (typeof key === 'number') return item(value, key);
    if (key === 'first') return item(value, 0);
    if (key === 'last') return item(value, -1);
  }
  if (key === 'size' && !Object.hasOwn(value, 'size')) {
    if (Array.isArray(value) || typeof value === 'string') return { found: true, value: value.length };
    if (typeof value === 'object') return { found: true, value: Object.keys(value).length };
  }
  return Object.hasOwn(value, key) ? { found: true, value: (value as Record<string | number, unknown>)[key] } : NOT_FOUND;
}

function item(array: unknown[], index: number): Read {
  const at = index < 0 ? array.length + index : index;
  return Object.hasOwn(array, at) ? { found: true, value: array[at] } : NOT_FOUND;
}
