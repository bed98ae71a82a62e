import { createPublicKey, KeyObject, verify } from 'node:crypto';
import { WebhookRejected, WebhookRequest } from '../carrier-webhooks';

export const TELNYX_SIGNATURE_HEADER = 'telnyx-signature-ed25519';
export const TELNYX_TIMESTAMP_HEADER = 'telnyx-timestamp';
/** A webhook signed longer ago (or further ahead) than this is treated as a replay. */
export const TELNYX_SIGNATURE_TOLERANCE_MS = 5 * 60 * 1000;

/** DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410); the raw 32-byte key follows it. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/**
 * Telnyx signs each webhook with the account's Ed25519 key: the signature
 * (base64, `telnyx-signature-ed25519`) covers `${telnyx-timestamp}|${raw body}`,
 * the timestamp being Unix seconds. Throws `WebhookRejected`: 401 when the
 * headers are missing, 403 when the signature is wrong or too old.
 */
export function verifyTelnyxSignature(request: WebhookRequest, publicKeyBase64: string | null, nowMs: number): void {
  const signature = request.headers[TELNYX_SIGNATURE_HEADER];
  const timestamp = request.headers[TELNYX_TIMESTAMP_HEADER];
  if (!signature || !timestamp) throw new WebhookRejected(401, 'The request carries no Telnyx signature');
  if (!publicKeyBase64) throw new WebhookRejected(403, 'The telephony configuration has no Telnyx public key to verify with');
  if (!/^\d{1,12}$/.test(timestamp.trim())) throw new WebhookRejected(403, 'The Telnyx timestamp is malformed');
  if (Math.abs(nowMs - Number(timestamp.trim()) * 1000) > TELNYX_SIGNATURE_TOLERANCE_MS) {
    throw new WebhookRejected(403, 'The Telnyx signature is too old: replayed request');
  }
  const signatureBytes = Buffer.from(signature.trim(), 'base64');
  if (signatureBytes.length !== 64) throw new WebhookRejected(403, 'The Telnyx signature is malformed');
  const signed = Buffer.concat([Buffer.from(`${timestamp.trim()}|`, 'utf8'), request.rawBody]);
  if (!verifyEd25519(signed, signatureBytes, Buffer.from(publicKeyBase64, 'base64'))) {
    throw new WebhookRejected(403, 'The Telnyx signature does not match');
  }
}

/** Verifies an Ed25519 signature with a raw 32-byte public key. */
export function verifyEd25519(message: Buffer, signature: Buffer, rawPublicKey: Buffer): boolean {
  if (rawPublicKey.length !== 32) return false;
  try {
    return verify(null, message, ed25519PublicKey(rawPublicKey), signature);
  } catch {
    return false;
  }
}

export function ed25519PublicKey(rawPublicKey: Buffer): KeyObject {
  return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, rawPublicKey]), format: 'der', type: 'spki' });
}
