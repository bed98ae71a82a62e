import { CarrierError } from '../carrier-error';
import { retryAfterMs } from '../carrier-http';
import { VonageResponse } from './vonage-api';

interface VonageProblem {
  /** The fragment of the RFC 7807 `type` URL: `unauthorized`, `invalid-params`, `account-suspended` ... */
  code: string | null;
  title: string | null;
  detail: string | null;
  invalidParameters: { name: string; reason: string }[];
}

/** Vonage takes 3 call creations per rolling second; without a Retry-After, wait that second out. */
const THROTTLE_DEFAULT_MS = 1000;

/**
 * Classifies a refused `POST /v1/calls`. Vonage answers errors as RFC 7807
 * problems (`type`, `title`, `detail`, `invalid_parameters`), and rejects —
 * does not queue — call creations beyond its rate with 429. A 408 (Request
 * Timeout) is taken as a 429: the server gave up waiting for the request
 * before taking it, so nothing was placed, and later it may go through.
 */
export function vonageDialError(response: VonageResponse): CarrierError {
  const problem = vonageProblem(response.body);
  const carrierCode = problem.code ?? `HTTP-${response.status}`;
  const message = `Vonage refused the call (${response.status}${problem.title ? ` ${problem.title}` : ''}${problem.detail ? `: ${problem.detail}` : ''})`;

  if (response.status === 429 || response.status === 408) {
    return new CarrierError(message, {
      reason: 'carrier_throttled',
      permanent: false,
      notProcessed: true,
      throttled: true,
      retryAfterMs: retryAfterMs(response.headers.get('retry-after')) ?? THROTTLE_DEFAULT_MS,
      carrierCode,
    });
  }
  if (response.status === 401) {
    return new CarrierError(message, { reason: 'carrier_unauthorized', permanent: true, notProcessed: true, carrierCode });
  }
  if (problem.code === 'account-suspended') {
    return new CarrierError(message, { reason: 'account_suspended', permanent: true, notProcessed: true, carrierCode });
  }
  if (response.status === 402 || problem.code === 'low-balance' || problem.code === 'out-of-credit') {
    return new CarrierError(message, { reason: 'insufficient_funds', permanent: true, notProcessed: true, carrierCode });
  }
  if (response.status === 403) {
    return new CarrierError(message, { reason: 'carrier_unauthorized', permanent: true, notProcessed: true, carrierCode });
  }
  // Not a refusal Vonage documents as "nothing done": a proxy in front of its API answers 503 for a creation whose
  // answer it lost too, and a call creation has no idempotency key. The outcome is unknown (asked, never redialed).
  if (response.status === 503) {
    return new CarrierError(`${message}; the call may or may not have been placed`, {
      reason: 'carrier_unavailable',
      permanent: false,
      notProcessed: false,
      carrierCode,
    });
  }
  if (response.status >= 500) {
    return new CarrierError(message, { reason: 'carrier_error', permanent: false, notProcessed: false, carrierCode });
  }
  const names = problem.invalidParameters.map((parameter) => parameter.name);
  if (names.some((name) => /^to\b/.test(name))) {
    return new CarrierError(message, { reason: 'invalid_number', permanent: true, notProcessed: true, carrierCode });
  }
  if (names.some((name) => /^from\b/.test(name))) {
    return new CarrierError(message, { reason: 'invalid_from_number', permanent: true, notProcessed: true, carrierCode });
  }
  return new CarrierError(message, { reason: 'carrier_rejected', permanent: true, notProcessed: true, carrierCode });
}

export function vonageProblem(body: unknown): VonageProblem {
  const problem = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const type = typeof problem.type === 'string' ? problem.type : '';
  const parameters = Array.isArray(problem.invalid_parameters) ? (problem.invalid_parameters as Record<string, unknown>[]) : [];
  return {
    code: type.includes('#') ? type.slice(type.indexOf('#') + 1) : null,
    title: typeof problem.title === 'string' ? problem.title : null,
    detail: typeof problem.detail === 'string' ? problem.detail : null,
    invalidParameters: parameters
      .filter((parameter) => typeof parameter?.name === 'string')
      .map((parameter) => ({ name: parameter.name as string, reason: String(parameter.reason ?? '') })),
  };
}
