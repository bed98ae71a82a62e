import { createHmac, KeyObject, randomUUID, sign, timingSafeEqual } from 'node:crypto';

/** Lifetime of the JWT we sign for one API request. */
const REQUEST_JWT_TTL_SECONDS = 300;

export interface DecodedJwt {
  header: Record<string, unknown>;
  claims: Record<string, unknown>;
  signingInput: string;
  signature: Buffer;
}

/**
 * The JWT Vonage's Voice API takes as `Authorization: Bearer`: RS256 over
 * `{ application_id, iat, jti, exp }`, signed with the application's private key.
 */
export function signVonageApplicationJwt(applicationId: string, privateKey: KeyObject, nowMs = Date.now()): string {
  const iat = Math.floor(nowMs / 1000);
  const header = base64UrlJson({ alg: 'RS256', typ: 'JWT' });
  const claims = base64UrlJson({ application_id: applicationId, iat, jti: randomUUID(), exp: iat + REQUEST_JWT_TTL_SECONDS });
  const signingInput = `${header}.${claims}`;
  return `${signingInput}.${sign('sha256', Buffer.from(signingInput), privateKey).toString('base64url')}`;
}

/** Splits and decodes a compact JWS; null when it is not one. Verifies nothing. */
export function decodeJwt(token: string): DecodedJwt | null {
  const parts = token.split('.');
  if (parts.length !== 3 || parts.some((part) => !/^[A-Za-z0-9_-]*$/.test(part))) return null;
  try {
    const header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8')) as unknown;
    const claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as unknown;
    if (!isObject(header) || !isObject(claims)) return null;
    return { header, claims, signingInput: `${parts[0]}.${parts[1]}`, signature: Buffer.from(parts[2], 'base64url') };
  } catch {
    return null;
  }
}

/** True when `jwt` is signed HS256 with `secret` (and says so in its header). */
export function hasValidHs256Signature(jwt: DecodedJwt, secret: string | Buffer): boolean {
  if (jwt.header.alg !== 'HS256') return false;
  const expected = createHmac('sha256', secret).update(jwt.signingInput).digest();
  return expected.length === jwt.signature.length && timingSafeEqual(expected, jwt.signature);
}

function base64UrlJson(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
