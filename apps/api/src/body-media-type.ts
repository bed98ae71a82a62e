import type { IncomingHttpHeaders } from 'node:http';

/** The one route that takes audio: an agent session's recording upload. */
const RECORDING_UPLOAD = /^\/api\/v1\/agent-sessions\/[^/?]+\/recording(?:\?|$)/;
/** Carrier status callbacks: Twilio and Plivo post form fields, and are checked by their signature, not their type. */
const CARRIER_WEBHOOK = /^\/api\/v1\/telephony\//;
const AUDIO = /^\s*audio\//i;
/** What the JSON parser takes: `application/json`, with or without parameters. */
const JSON_TYPE = /^\s*application\/json\s*(?:;|$)/i;
/**
 * One parameter of a media type (RFC 9110 §5.6.6): a name, and a token or a
 * quoted-string value, whose quotes may hold a `;` (or a `charset=`) of their own.
 */
const PARAMETER = /;\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)=("(?:[^"\\]|\\.)*"|[!#$%&'*+.^_`|~0-9A-Za-z-]*)/g;

/**
 * Why a request's body is refused for its declared media type (a 415,
 * answered before the body is read), or null. Audio is taken only by the
 * recording upload; every other body is JSON, but for carrier callbacks.
 * Without this, a form-encoded body (what `curl -d` sends when no type is
 * given) or a text/plain one was parsed and answered with a misleading 400:
 * a form's `+` reads as a space, so a number sent with its plus was refused
 * for lacking one. A request without a body, or without a type, is left to
 * the route and to Fastify. JSON is read as UTF-8: a body declared in
 * another charset (`charset=iso-8859-1`) is refused, not decoded as if it were
 * UTF-8 into U+FFFD, which would be stored as sent.
 */
export function bodyMediaTypeRefusal(method: string, url: string, headers: IncomingHttpHeaders): string | null {
  const type = headers['content-type'];
  if (typeof type !== 'string') return null;
  // The recording upload checks its session's token first, then its own types (a 415 that names them).
  if (method === 'PUT' && RECORDING_UPLOAD.test(url)) return null;
  if (AUDIO.test(type)) return 'Audio is accepted only by the recording upload';
  if (!hasBody(headers) || CARRIER_WEBHOOK.test(url)) return null;
  if (!JSON_TYPE.test(type)) return 'Send the body as JSON, with Content-Type: application/json';
  if (declaresOtherCharset(type)) return 'Send the JSON body in UTF-8, with Content-Type: application/json (and no charset, or charset=utf-8)';
  return null;
}

/** UTF-8's name, and the alias some clients send for it: the bytes are checked as UTF-8 either way. */
const UTF8_NAMES = new Set(['utf-8', 'utf8']);

/** Whether a `charset` parameter of the type names anything but UTF-8 (names are case-insensitive, the value may be quoted). */
function declaresOtherCharset(type: string): boolean {
  if (!type.includes(';')) return false; // no parameters: the common case, on every JSON request
  for (const [, name, value] of type.matchAll(PARAMETER)) {
    if (name.toLowerCase() === 'charset' && !UTF8_NAMES.has(unquoted(value).toLowerCase())) return true;
  }
  return false;
}

function unquoted(value: string): string {
  return value.startsWith('"') ? value.slice(1, -1).replace(/\\(.)/g, '$1') : value;
}

/** Whether the request announces a body: a `Transfer-Encoding`, or a `Content-Length` above 0. */
export function hasBody(headers: IncomingHttpHeaders): boolean {
  return headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;
}
