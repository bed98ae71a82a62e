/** What an HTTP header carries as sent, and all any carrier issues as a key, token or secret. */
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

/**
 * The problem with a credential that goes into an HTTP header (a Bearer key,
 * or a Basic auth pair), or null. A control character makes fetch refuse the
 * header before anything is sent, which a verify reports as an unreachable
 * carrier and a dial as an unknown outcome, rather than as invalid
 * credentials; a character beyond ASCII would go out UTF-8 encoded, a secret
 * no carrier issued. Either way the value cannot work, so it is refused when
 * the configuration is saved.
 */
export function headerCredentialProblem(field: string, value: string): string | null {
  return VISIBLE_ASCII.test(value)
    ? null
    : `credentials.${field} must be visible ASCII characters only (no spaces or control characters): it is sent in an HTTP header`;
}
