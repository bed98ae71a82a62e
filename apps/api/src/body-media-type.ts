import type { IncomingHttpHeaders } from 'node:http';

/** The one route that takes audio: an agent session's recording upload. */
const RECORDING_UPLOAD = /^\/api\/v1\/agent-sessions\/[^/?]+\/recording(?:\?|$)/;
/** Carrier status callbacks: Twilio and Plivo post form fields, and are checked by their signature, not their type. */
const CARRIER_WEBHOOK = /^\/api\/v1\/telephony\//;
const AUDIO = /^\s*audio\//i;
/** What the JSON parser takes: `application/json`, with or without parameters. */
const JSON_TYPE = /^\s*application\/json\s*(?:;|$)/i;

/**
 * Why a request's body is refused for its declared media type (a 415,
 * answered before the body is read), or null. Audio is taken only by the
 * recording upload; every other body is JSON, but for carrier callbacks.
 * Without this, a form-encoded body (what `curl -d` sends when no type is
 * given) or a text/plain one was parsed and answered with a misleading 400:
 * a form's `+` reads as a space, so a number sent with its plus was refused
 * for lacking one. A request without a body, or without a type, is left to
 * the route and to Fastify.
 */
export function bodyMediaTypeRefusal(method: string, url: string, headers: IncomingHttpHeaders): string | null {
  const type = headers['content-type'];
  if (typeof type !== 'string') return null;
  if (AUDIO.test(type)) return method === 'PUT' && RECORDING_UPLOAD.test(url) ? null : 'Audio is accepted only by the recording upload';
  if (JSON_TYPE.test(type) || !hasBody(headers) || CARRIER_WEBHOOK.test(url)) return null;
  return 'Send the body as JSON, with Content-Type: application/json';
}

function hasBody(headers: IncomingHttpHeaders): boolean {
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;
}
