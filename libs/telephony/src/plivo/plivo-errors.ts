import { withoutAccounts } from '../carrier-http';
import { CarrierError } from '../carrier-error';

/** Plivo's REST error body: `{ api_id, error }` (some endpoints also say `message`). */
export interface PlivoErrorBody {
  api_id?: string;
  error?: string | Record<string, unknown>;
  message?: string;
}

/**
 * Classifies Plivo's answer to a dial request, by the HTTP status codes its
 * API reference documents (400 a parameter missing or invalid, 401
 * authentication failed, 404 not found, 429 rate limited, 500 server error).
 * 429 is a refusal to act: nothing was placed. So is a 408 (Request Timeout):
 * the server gave up waiting for the request before taking it, and later it
 * may go through. Any other 4xx is a validation refusal retrying cannot fix.
 * Plivo does not say a 5xx left the request unprocessed, and creating a
 * call has no idempotency key, so the outcome is unknown.
 */
export function plivoDialError(status: number, body: PlivoErrorBody | null, retryAfterMs?: number): CarrierError {
  const text = errorText(body);
  // Read by customers in the run's log: without the account (auth id) a quoted path holds.
  const detail = `Plivo answered ${status}: ${withoutAccounts(text || 'no message')}`;
  const carrierCode = `HTTP-${status}`;
  if (status === 429 || status === 408) {
    return new CarrierError(detail, { reason: 'carrier_throttled', permanent: false, notProcessed: true, throttled: true, retryAfterMs, carrierCode });
  }
  if (status >= 500) {
    return new CarrierError(`${detail}; the call may or may not have been placed`, {
      reason: 'carrier_unavailable',
      permanent: false,
      notProcessed: false,
      carrierCode,
    });
  }
  return new CarrierError(detail, { reason: plivoRefusalReason(status, text), permanent: true, notProcessed: true, carrierCode });
}

/** The run's end reason for a 4xx refusal, from its status and Plivo's words. */
export function plivoRefusalReason(status: number, text: string): string {
  if (status === 401 || status === 404) return 'unauthorized';
  if (status === 402 || /insufficient|credit|balance/i.test(text)) return 'insufficient_funds';
  if (/suspend|disabled|deactivat|inactive/i.test(text)) return 'account_suspended';
  if (/\bfrom\b|caller.?id/i.test(text)) return 'invalid_from_number';
  if (/\bto\b|destination|number/i.test(text)) return /permission|not allowed|country/i.test(text) ? 'geo_permission_denied' : 'invalid_number';
  return 'carrier_rejected';
}

/** The end reason for a call Plivo reports failed, from its hangup cause name ("Plivo hangup causes"). */
export function plivoHangupReason(hangupCause: string | undefined): string {
  if (!hangupCause) return 'carrier_failed';
  if (/invalid|unallocated|not.?found|unknown destination|no route to destination/i.test(hangupCause)) return 'invalid_number';
  if (/reject|barred|blocked|forbidden|declin/i.test(hangupCause)) return 'rejected';
  if (/unreachable|out of order|network|congestion|unavailable|timeout|failure/i.test(hangupCause)) return 'unreachable';
  return 'carrier_failed';
}

function errorText(body: PlivoErrorBody | null): string {
  if (!body) return '';
  if (typeof body.error === 'string') return body.error;
  if (body.error && typeof body.error === 'object') return JSON.stringify(body.error);
  return body.message ?? '';
}
