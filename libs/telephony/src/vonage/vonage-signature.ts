import { createHash, timingSafeEqual } from 'node:crypto';
import { WebhookRejected, WebhookRequest } from '../carrier-webhooks';
import { decodeJwt, hasValidHs256Signature } from './vonage-jwt';

/** A webhook JWT issued longer ago (or further ahead) than this is treated as a replay. */
export const VONAGE_SIGNATURE_TOLERANCE_MS = 5 * 60 * 1000;

/**
 * Vonage signs its Voice webhooks with a JWT in `Authorization: Bearer`,
 * HS256 with the account's signature secret; its `payload_hash` claim is the
 * SHA-256 (hex) of the body. Checked here: the signature (HS256 only, so an
 * `alg: none` token is refused), `iat` within 5 minutes, `exp` when present,
 * `payload_hash` against the raw body, and `application_id` when present.
 * Throws `WebhookRejected`: 401 unsigned, 403 forged, tampered or replayed.
 */
export function verifyVonageWebhook(
  request: WebhookRequest,
  expected: { signatureSecret: string | null; applicationId: string | null },
  nowMs: number,
): void {
  const token = bearerToken(request);
  if (!token) throw new WebhookRejected(401, 'The request carries no Vonage signature');
  if (!expected.signatureSecret) throw new WebhookRejected(403, 'The telephony configuration has no Vonage signature secret to verify with');
  const jwt = decodeJwt(token);
  if (!jwt) throw new WebhookRejected(403, 'The Vonage signature is malformed');
  if (!hasValidHs256Signature(jwt, expected.signatureSecret)) throw new WebhookRejected(403, 'The Vonage signature does not match');

  const { iat, exp, payload_hash: payloadHash, application_id: applicationId } = jwt.claims;
  if (typeof iat !== 'number' || !Number.isFinite(iat)) throw new WebhookRejected(403, 'The Vonage signature has no issue time');
  if (Math.abs(nowMs - iat * 1000) > VONAGE_SIGNATURE_TOLERANCE_MS) {
    throw new WebhookRejected(403, 'The Vonage signature is too old: replayed request');
  }
  if (typeof exp === 'number' && exp * 1000 < nowMs) throw new WebhookRejected(403, 'The Vonage signature has expired');
  if (
    applicationId !== undefined &&
    expected.applicationId &&
    String(applicationId).toLowerCase() !== expected.applicationId.toLowerCase()
  ) {
    throw new WebhookRejected(403, 'The Vonage signature is for another application');
  }
  if (request.rawBody.length > 0 || payloadHash !== undefined) {
    const actual = createHash('sha256').update(request.rawBody).digest();
    const claimed = typeof payloadHash === 'string' && /^[0-9a-f]{64}$/i.test(payloadHash) ? Buffer.from(payloadHash, 'hex') : null;
    if (!claimed || !timingSafeEqual(actual, claimed)) throw new WebhookRejected(403, 'The body does not match the Vonage signature');
  }
}

/**
 * What names one signed delivery, for refusing an exact replay (call it after
 * `verifyVonageWebhook`): the JWT's `jti`, unique per token, else a hash of
 * the token itself. Null when the request carries no token.
 */
export function vonageReplayKey(request: WebhookRequest): string | null {
  const token = bearerToken(request);
  if (!token) return null;
  const jti = decodeJwt(token)?.claims.jti;
  if (typeof jti === 'string' && jti) return `vonage:jti:${jti}`;
  return `vonage:token:${createHash('sha256').update(token).digest('hex')}`;
}

function bearerToken(request: WebhookRequest): string | null {
  return /^Bearer\s+(\S+)$/i.exec((request.headers.authorization ?? '').trim())?.[1] ?? null;
}
