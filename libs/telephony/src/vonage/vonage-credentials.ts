import { createPrivateKey, KeyObject } from 'node:crypto';

/** A Vonage Voice application as a telephony configuration stores it. */
export interface VonageCredentials {
  applicationId: string;
  /** The application's RSA private key; it signs the RS256 JWT of every API request. */
  privateKey: KeyObject;
  /** The account's signature secret; it signs (HS256) the JWT on Vonage's webhooks. */
  signatureSecret: string;
}

const KNOWN = ['application_id', 'private_key', 'signature_secret'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function vonageCredentialProblems(credentials: Record<string, unknown> | null): string[] {
  if (!credentials) return ['credentials are required: application_id, private_key, signature_secret'];
  const problems: string[] = [];
  // None of these goes into an HTTP header as is (the API's Bearer JWT is base64url), so the PEM keeps its line breaks.
  const applicationId = credentials.application_id;
  if (typeof applicationId !== 'string' || !applicationId) problems.push('credentials.application_id is required (the Vonage application UUID)');
  else if (!UUID.test(applicationId)) problems.push('credentials.application_id must be a UUID');
  const privateKey = credentials.private_key;
  if (typeof privateKey !== 'string' || !privateKey.trim()) {
    problems.push("credentials.private_key is required (the application's PEM private key)");
  } else if (!parseRsaKey(privateKey)) {
    problems.push('credentials.private_key must be a PEM-encoded RSA private key');
  }
  const secret = credentials.signature_secret;
  if (typeof secret !== 'string' || !secret) problems.push('credentials.signature_secret is required (the account signature secret, to verify webhooks)');
  for (const key of Object.keys(credentials)) {
    if (!KNOWN.includes(key)) problems.push(`credentials.${key} is not a Vonage credential (known: ${KNOWN.join(', ')})`);
  }
  return problems;
}

/** Reads credentials; null when they are unusable. */
export function readVonageCredentials(credentials: Record<string, unknown> | null): VonageCredentials | null {
  if (!credentials || vonageCredentialProblems(credentials).length) return null;
  return {
    applicationId: (credentials.application_id as string).toLowerCase(),
    privateKey: parseRsaKey(credentials.private_key as string) as KeyObject,
    signatureSecret: credentials.signature_secret as string,
  };
}

function parseRsaKey(pem: string): KeyObject | null {
  try {
    const key = createPrivateKey({ key: pem.trim(), format: 'pem' });
    return key.asymmetricKeyType === 'rsa' ? key : null;
  } catch {
    return null;
  }
}
