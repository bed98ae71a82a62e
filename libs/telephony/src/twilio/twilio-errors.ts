import { withoutAccounts } from '../carrier-http';
import { CarrierError } from '../carrier-error';

/** Twilio's REST error body: `{ code, message, more_info, status }`. */
export interface TwilioErrorBody {
  code?: number;
  message?: string;
  more_info?: string;
  status?: number;
}

/**
 * Twilio error codes a dial request can meet, and the run's `end_reason` for
 * each (Twilio's error dictionary, twilio.com/docs/api/errors/<code>).
 */
export const TWILIO_ERROR_REASONS: Readonly<Record<number, string>> = {
  20003: 'unauthorized', // Permission denied: wrong Account SID, Auth Token or API key
  20005: 'account_suspended', // Account is not active
  20404: 'unauthorized', // The account (or call) in the URL does not exist for these credentials
  21201: 'invalid_number', // No 'To' number is specified
  21205: 'invalid_callback_url', // Invalid URL
  21210: 'invalid_from_number', // 'From' phone number not verified
  21212: 'invalid_from_number', // Invalid 'From' phone number
  21213: 'invalid_from_number', // 'From' phone number is required
  21211: 'invalid_number', // Invalid 'To' phone number
  21214: 'unreachable', // 'To' phone number cannot be reached
  21215: 'geo_permission_denied', // Geo Permission configuration is not permitting call
  21216: 'number_blocked', // Account not allowed to call this number
  21217: 'invalid_number', // Phone number does not appear to be valid
  21219: 'unverified_number', // 'To' number not verified (trial accounts)
  13224: 'invalid_number', // Twilio does not support calling this number or the number is invalid
  13227: 'geo_permission_denied', // No international authorization
};

export const TWILIO_THROTTLED_CODE = 20429;

/**
 * Classifies Twilio's answer to a dial request. Only 429/20429 is documented
 * as "never processed, always safe to retry"; a 408 (Request Timeout) says
 * the server gave up waiting for the request before taking it, so it is the
 * same: nothing was placed, and later it may go through. Any other 4xx is a
 * validation refusal: nothing was placed, and retrying cannot fix it. A 5xx
 * is not: Twilio's 20500 page warns that a retried outbound-call POST can
 * place a second call (there is no idempotency key), and 20503 does not say
 * the request was not acted on, so the outcome is unknown and the dialer
 * must ask before dialing again.
 */
export function twilioDialError(status: number, body: TwilioErrorBody | null, retryAfterMs?: number): CarrierError {
  const code = typeof body?.code === 'number' ? body.code : undefined;
  // Read by customers in the run's log: Twilio's message may quote the request's path, and its account.
  const detail = `Twilio answered ${status}${code ? ` (error ${code})` : ''}: ${withoutAccounts(body?.message ?? 'no message')}`;
  const carrierCode = code !== undefined ? String(code) : `HTTP-${status}`;
  if (status === 429 || status === 408 || code === TWILIO_THROTTLED_CODE) {
    return new CarrierError(detail, {
      reason: 'carrier_throttled',
      permanent: false,
      notProcessed: true,
      throttled: true,
      retryAfterMs,
      carrierCode,
    });
  }
  if (status >= 500) {
    return new CarrierError(`${detail}; the call may or may not have been placed`, {
      reason: 'carrier_unavailable',
      permanent: false,
      notProcessed: false,
      carrierCode,
    });
  }
  const reason = (code !== undefined ? TWILIO_ERROR_REASONS[code] : undefined) ?? (status === 401 ? 'unauthorized' : 'carrier_rejected');
  return new CarrierError(detail, { reason, permanent: true, notProcessed: true, carrierCode });
}

/** The end reason for a failed call's SIP response code, as status callbacks report it. */
export function twilioSipFailureReason(sipCode: number | undefined): string {
  if (sipCode === undefined) return 'carrier_failed';
  if ([404, 484, 604].includes(sipCode)) return 'invalid_number';
  if ([403, 603].includes(sipCode)) return 'rejected';
  if ([408, 410, 480, 502, 503, 504].includes(sipCode)) return 'unreachable';
  return 'carrier_failed';
}
