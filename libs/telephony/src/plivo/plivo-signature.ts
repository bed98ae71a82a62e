import { createHmac, timingSafeEqual } from 'node:crypto';

export const PLIVO_SIGNATURE_HEADER = 'x-plivo-signature-v3';
/** The same signature made with the main account's Auth Token (for subaccount traffic). */
export const PLIVO_MAIN_ACCOUNT_SIGNATURE_HEADER = 'x-plivo-signature-ma-v3';
export const PLIVO_NONCE_HEADER = 'x-plivo-signature-v3-nonce';

/** Parameters in the order received; a name may repeat. */
export type PlivoParams = ReadonlyArray<readonly [string, string]>;

/**
 * Plivo's signature V3 ("Validation", as Plivo's server SDKs compute it):
 * HMAC-SHA256 keyed with the Auth Token over `<base>.<nonce>`, Base64.
 *
 * `<base>` is the URL without its query, then:
 * - GET: `?` and the query's and the request's parameters as `name=value`,
 *   sorted by name (then value), joined with `&` (nothing when there are none);
 * - POST: `?` when there is a query or a body; the sorted query as above, and
 *   `.` when there are both; then the body's parameters sorted by name (then
 *   value), each name immediately followed by its value.
 */
export function plivoSignatureV3(authToken: string, method: string, url: string, params: PlivoParams, nonce: string): string {
  return createHmac('sha256', authToken).update(`${plivoSignedBase(method, url, params)}.${nonce}`, 'utf8').digest('base64');
}

/**
 * Checks a signature header in constant time. The header may list several
 * signatures separated by commas (one per active Auth Token); any may match.
 * None matches a URL that cannot be read: nothing was signed for it.
 */
export function plivoSignatureMatches(
  authToken: string,
  method: string,
  url: string,
  params: PlivoParams,
  nonce: string,
  header: string,
): boolean {
  if (!URL.canParse(url)) return false;
  const expected = Buffer.from(plivoSignatureV3(authToken, method, url, params, nonce), 'utf8');
  let matched = false;
  for (const candidate of header.split(',')) {
    const given = Buffer.from(candidate.trim(), 'utf8');
    if (given.length === expected.length && timingSafeEqual(given, expected)) matched = true;
  }
  return matched;
}

export function plivoSignedBase(method: string, url: string, params: PlivoParams): string {
  const parsed = new URL(url);
  let base = `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  const query = grouped([...parsed.searchParams]);
  if (method.toUpperCase() === 'GET') {
    grouped(params, query);
    const queryString = sortedQuery(query);
    return queryString ? `${base}?${queryString}` : base;
  }
  const body = grouped(params);
  const queryString = sortedQuery(query);
  if (queryString || body.size > 0) base += `?${queryString}`;
  if (queryString && body.size > 0) base += '.';
  for (const name of [...body.keys()].sort()) for (const value of [...body.get(name)!].sort()) base += name + value;
  return base;
}

/**
 * The parameters' values by name, added to `byName`. In place: copying a
 * name's values for each repeat would cost time quadratic in the repeats,
 * and the check runs on a body before it is known to be Plivo's.
 */
function grouped(params: PlivoParams, byName = new Map<string, string[]>()): Map<string, string[]> {
  for (const [name, value] of params) {
    const values = byName.get(name);
    if (values) values.push(value);
    else byName.set(name, [value]);
  }
  return byName;
}

function sortedQuery(byName: Map<string, string[]>): string {
  return [...byName.keys()]
    .sort()
    .flatMap((name) => [...byName.get(name)!].sort().map((value) => `${name}=${value}`))
    .join('&');
}
