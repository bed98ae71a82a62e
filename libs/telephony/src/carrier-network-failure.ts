import { CarrierError } from './carrier-error';
import { CarrierRequestFailed, causeOfType, DownloadRefused } from './carrier-http';

/**
 * Classifies a request that got no answer, as the Telnyx and Vonage
 * integrations do: refused before sending is a not-processed `CarrierError`;
 * anything else (reset, timeout) is an ordinary error, because then nobody
 * knows whether the carrier acted on it. That error keeps the failed request
 * (`CarrierRequestFailed`, the socket error under it) as its cause, so a
 * caller can still tell "no answer from the carrier" from any other failure:
 * a cancel answers 502 for it, not a database outage or a refusal.
 */
export function carrierNetworkFailure(what: string, error: unknown): Error {
  if (error instanceof DownloadRefused) return new Error(`${what}: ${error.message}`, { cause: error });
  const failure = error instanceof CarrierRequestFailed ? error.cause : error;
  const code = (failure as { cause?: { code?: string } }).cause?.code ?? (failure as { name?: string }).name ?? 'network_error';
  // As `carrierHttp` judged it, alike for every carrier.
  if (error instanceof CarrierRequestFailed && !error.reachedCarrier) {
    return new CarrierError(`${what}: carrier unreachable (${code})`, {
      reason: 'carrier_unreachable',
      permanent: false,
      notProcessed: true,
      carrierCode: code,
    });
  }
  return new Error(`${what}: no answer (${code}); the carrier may or may not have acted on it`, { cause: error });
}

/**
 * Whether `error` is, or wraps, a download the dialer refused to make (a
 * host that does not resolve to a public address, a redirect it does not
 * trust): trying again would be refused the same way.
 */
export function isDownloadRefused(error: unknown): boolean {
  return causeOfType(error, DownloadRefused) !== null;
}

/**
 * Whether `error` is a request that got no answer from the carrier (refused,
 * unknown host, reset, timeout), not an answer the carrier gave: what
 * `carrierHttp` throws, and what `carrierNetworkFailure` makes of it, however
 * it is wrapped. Such a request changed nothing we know of, and may work
 * again; a caller answers it 502, never as a refusal (a `CarrierError` whose
 * kind is a rejection) nor as its own outage (the socket error under it names
 * a connection, but not the database's).
 */
export function isCarrierNetworkFailure(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 4; depth++) {
    if (current instanceof CarrierRequestFailed) return true;
    if (current instanceof CarrierError) return current.reason === 'carrier_unreachable';
    current = current.cause;
  }
  return false;
}
