import { headerCredentialProblem } from '../header-credential-problem';

/** A Telnyx account as a telephony configuration stores it (snake_case, as the API accepts it). */
export interface TelnyxCredentials {
  /** API v2 key, sent as `Authorization: Bearer`. */
  apiKey: string;
  /** The Call Control Application that places the calls (Telnyx calls it `connection_id`). */
  connectionId: string;
  /** The account's Ed25519 webhook public key, base64, as the portal shows it (32 bytes). */
  publicKey: string;
}

const KNOWN = ['api_key', 'connection_id', 'public_key'];
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const ED25519_PUBLIC_KEY_BYTES = 32;

export function telnyxCredentialProblems(credentials: Record<string, unknown> | null): string[] {
  if (!credentials) return ['credentials are required: api_key, connection_id, public_key'];
  const problems: string[] = [];
  for (const key of ['api_key', 'connection_id']) {
    const value = credentials[key];
    if (typeof value !== 'string' || !value.trim()) problems.push(`credentials.${key} is required (a non-empty string)`);
    else if (/\s/.test(value)) problems.push(`credentials.${key} must not contain spaces`);
    else {
      // The API key goes into the Authorization header; the connection_id only into a path (encoded) and a JSON body.
      const headerProblem = key === 'api_key' ? headerCredentialProblem(key, value) : null;
      if (headerProblem) problems.push(headerProblem);
    }
  }
  const publicKey = credentials.public_key;
  if (typeof publicKey !== 'string' || !publicKey.trim()) {
    problems.push('credentials.public_key is required: the base64 webhook public key from the Telnyx portal');
  } else if (!isEd25519PublicKey(publicKey.trim())) {
    problems.push('credentials.public_key must be the base64 of a 32-byte Ed25519 public key');
  }
  for (const key of Object.keys(credentials)) {
    if (!KNOWN.includes(key)) problems.push(`credentials.${key} is not a Telnyx credential (known: ${KNOWN.join(', ')})`);
  }
  return problems;
}

/** Reads credentials already validated; returns null when they are unusable. */
export function readTelnyxCredentials(credentials: Record<string, unknown> | null): TelnyxCredentials | null {
  if (telnyxCredentialProblems(credentials).length || !credentials) return null;
  return {
    apiKey: credentials.api_key as string,
    connectionId: credentials.connection_id as string,
    publicKey: (credentials.public_key as string).trim(),
  };
}

function isEd25519PublicKey(value: string): boolean {
  return BASE64.test(value) && Buffer.from(value, 'base64').length === ED25519_PUBLIC_KEY_BYTES;
}
