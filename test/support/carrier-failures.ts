import { CarrierError } from '@app/telephony';

/** What a carrier's request that never connected (`code`: ECONNREFUSED, UND_ERR_CONNECT_TIMEOUT, ...) is classified as. */
export function neverConnected(code: string): CarrierError {
  return new CarrierError(`sandbox: carrier unreachable (${code})`, { reason: 'carrier_unreachable', permanent: false, notProcessed: true, carrierCode: code });
}
