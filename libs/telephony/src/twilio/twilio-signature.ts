import { createHmac, timingSafeEqual } from 'node:crypto';

export const TWILIO_SIGNATURE_HEADER = 'x-twilio-signature';

/** Form fields in the order received; a name may repeat. */
export type FormFields = ReadonlyArray<readonly [string, string]>;

/**
 * Twilio's request signature ("Secure webhooks"): the full URL Twilio
 * requested, then every POST field sorted by name (case-sensitive), each name
 * immediately followed by its value, no separators; HMAC-SHA1 keyed with the
 * Auth Token; Base64. A name sent several times contributes each distinct
 * value once, in sorted order, as Twilio's own helper libraries do.
 */
export function twilioSignature(authToken: string, url: string, fields: FormFields): string {
  const byName = new Map<string, Set<string>>();
  for (const [name, value] of fields) {
    const values = byName.get(name) ?? new Set<string>();
    values.add(value);
    byName.set(name, values);
  }
  let data = url;
  for (const name of [...byName.keys()].sort()) {
    for (const value of [...byName.get(name)!].sort()) data += name + value;
  }
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

/**
 * Checks a signature in constant time. Twilio signs the URL as it dialed it,
 * and its helper libraries accept the URL with and without an explicit
 * default port (":443"/":80"), because proxies and Twilio differ on it.
 */
export function twilioSignatureMatches(authToken: string, url: string, fields: FormFields, signature: string): boolean {
  const given = Buffer.from(signature, 'utf8');
  let matched = false;
  for (const variant of urlVariants(url)) {
    const expected = Buffer.from(twilioSignature(authToken, variant, fields), 'utf8');
    // Every variant is compared, so the time taken does not tell which one was close.
    if (expected.length === given.length && timingSafeEqual(expected, given)) matched = true;
  }
  return matched;
}

function urlVariants(url: string): string[] {
  const variants = new Set([url]);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [...variants];
  }
  const defaultPort = parsed.protocol === 'https:' ? '443' : parsed.protocol === 'http:' ? '80' : null;
  if (defaultPort === null || parsed.port !== '') return [...variants];
  const credentials = parsed.username ? `${parsed.username}${parsed.password ? `:${parsed.password}` : ''}@` : '';
  const rest = `${parsed.pathname}${parsed.search}`;
  variants.add(`${parsed.protocol}//${credentials}${parsed.hostname}${rest}`);
  variants.add(`${parsed.protocol}//${credentials}${parsed.hostname}:${defaultPort}${rest}`);
  return [...variants];
}
