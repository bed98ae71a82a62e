import { CarrierError } from '../carrier-error';
import { retryAfterMs } from '../carrier-http';
import { TelnyxResponse } from './telnyx-api';

interface TelnyxApiError {
  code?: string;
  title?: string;
  detail?: string;
  source?: { pointer?: string };
}

/** Telnyx's codes for "slow down": 10011 (any endpoint), 90103 (dial rate, 30 dials/s per rolling 5 s). */
const THROTTLE_CODES = ['10011', '90103'];
/** 10002 "Invalid phone number", 10016 "Phone number must be in +E.164 format". */
const INVALID_NUMBER_CODES = ['10002', '10016'];
/** 10009 "Authentication failed", 10010 "Authorization failed". */
const AUTH_CODES = ['10009', '10010'];

/**
 * Classifies a refused dial (non-2xx answer to `POST /v2/calls`), from the
 * HTTP status and the documented error codes in `errors[]`. A 408 (Request
 * Timeout) is taken as a 429: the server gave up waiting for the request
 * before taking it, so nothing was placed, and later it may go through.
 */
export function telnyxDialError(response: TelnyxResponse): CarrierError {
  const errors = telnyxErrors(response.body);
  const codes = errors.map((error) => error.code ?? '');
  const first = errors[0];
  const carrierCode = first?.code ?? `HTTP-${response.status}`;
  const message = `Telnyx refused the dial (${response.status}${first ? ` ${first.code}: ${first.title ?? ''}${first.detail ? ` — ${first.detail}` : ''}` : ''})`;

  if (response.status === 429 || response.status === 408 || codes.some((code) => THROTTLE_CODES.includes(code))) {
    return new CarrierError(message, {
      reason: 'carrier_throttled',
      permanent: false,
      notProcessed: true,
      throttled: true,
      retryAfterMs: retryAfterMs(response.headers.get('retry-after')),
      carrierCode,
    });
  }
  if (response.status === 401 || response.status === 403 || codes.some((code) => AUTH_CODES.includes(code))) {
    return new CarrierError(message, { reason: 'carrier_unauthorized', permanent: true, notProcessed: true, carrierCode });
  }
  // As any 5xx: Telnyx does not document a 503 as "nothing done", and a Dial retried after one that was acted on
  // would ring twice (its command_id is not counted on to stop that). Asked, never redialed.
  if (response.status === 503) {
    return new CarrierError(`${message}; the call may or may not have been placed`, {
      reason: 'carrier_unavailable',
      permanent: false,
      notProcessed: false,
      carrierCode,
    });
  }
  if (response.status >= 500) {
    // Telnyx may have acted before failing: the dialer must ask before dialing again.
    return new CarrierError(message, { reason: 'carrier_error', permanent: false, notProcessed: false, carrierCode });
  }
  const numberError = errors.find(
    (error) => INVALID_NUMBER_CODES.includes(error.code ?? '') || /^\/(to|from)$/.test(error.source?.pointer ?? ''),
  );
  if (numberError) {
    const which = numberError.source?.pointer === '/from' ? 'invalid_from_number' : 'invalid_number';
    return new CarrierError(message, { reason: which, permanent: true, notProcessed: true, carrierCode: numberError.code ?? carrierCode });
  }
  if (codes.includes('10001')) {
    // "Inactive phone number": the from number no longer belongs to an active Telnyx number.
    return new CarrierError(message, { reason: 'invalid_from_number', permanent: true, notProcessed: true, carrierCode: '10001' });
  }
  return new CarrierError(message, { reason: 'carrier_rejected', permanent: true, notProcessed: true, carrierCode });
}

export function telnyxErrors(body: unknown): TelnyxApiError[] {
  const errors = (body as { errors?: unknown } | null)?.errors;
  if (!Array.isArray(errors)) return [];
  return errors
    .filter((error): error is Record<string, unknown> => typeof error === 'object' && error !== null)
    .map((error) => ({
      code: error.code === undefined ? undefined : String(error.code),
      title: typeof error.title === 'string' ? error.title : undefined,
      detail: typeof error.detail === 'string' ? error.detail : undefined,
      source: typeof error.source === 'object' && error.source !== null ? (error.source as { pointer?: string }) : undefined,
    }));
}
