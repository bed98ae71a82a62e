import { CarrierError } from './carrier-error';
import { CarrierRequestFailed, RedirectRefused } from './carrier-http';

const NEVER_SENT = ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN'];

/**
 * Classifies a request that got no answer, as the Telnyx and Vonage
 * integrations do: refused before sending is a not-processed `CarrierError`;
 * anything else (reset, timeout) is an ordinary error, because then nobody
 * knows whether the carrier acted on it.
 */
export function carrierNetworkFailure(what: string, error: unknown): Error {
  if (error instanceof RedirectRefused) return new Error(`${what}: ${error.message}`, { cause: error });
  const failure = error instanceof CarrierRequestFailed ? error.cause : error;
  const code = (failure as { cause?: { code?: string } }).cause?.code ?? (failure as { name?: string }).name ?? 'network_error';
  if (NEVER_SENT.includes(code)) {
    return new CarrierError(`${what}: carrier unreachable (${code})`, {
      reason: 'carrier_unreachable',
      permanent: false,
      notProcessed: true,
      carrierCode: code,
    });
  }
  return new Error(`${what}: no answer (${code}); the carrier may or may not have acted on it`, { cause: failure });
}
