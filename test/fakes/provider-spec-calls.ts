import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { CallReference, callbackUrlsFor, CarrierError, PlaceCallRequest } from '@app/telephony';
import { WebhookReceiver } from './webhook-receiver';

/** The call a provider spec places: run 7 of organization 3, with its callbacks at the receiver. */
export function specDial(
  receiver: WebhookReceiver,
  provider: string,
  credentials: Record<string, unknown>,
  overrides: Partial<PlaceCallRequest> = {},
): PlaceCallRequest {
  return {
    runId: 7,
    organizationId: 3,
    to: '+14155550123',
    from: '+14155550100',
    credentials,
    settings: {},
    maxCallDurationSeconds: 600,
    callbacks: callbackUrlsFor(receiver.base, provider, 7),
    ...overrides,
  };
}

/** The placed call of `specDial`, as the dialer refers to it later. */
export function specReference(credentials: Record<string, unknown>, providerCallId: string | null): CallReference {
  return { runId: 7, organizationId: 3, providerCallId, credentials, settings: {} };
}

/** The `CarrierError` a dial is expected to fail with. */
export async function dialError(promise: Promise<unknown>): Promise<CarrierError> {
  const error = await promise.then(() => null, (caught: unknown) => caught);
  expect(error).toBeInstanceOf(CarrierError);
  return error as CarrierError;
}

/**
 * Points a download at a loopback host that is not the carrier's (as a forged
 * recording callback could), directly or `via` a redirect from a host the
 * download trusts: what reached that host (the Authorization header of each
 * request) and whether the download was refused.
 */
export async function downloadElsewhere(
  download: (url: string) => Promise<unknown>,
  via: (elsewhere: string) => string = (elsewhere) => elsewhere,
): Promise<{ authorizations: Array<string | undefined>; refused: boolean }> {
  const seen: Array<string | undefined> = [];
  const elsewhere = createServer((request, response) => {
    seen.push(request.headers.authorization);
    response.writeHead(200, { 'content-type': 'audio/wav' }).end('RIFF');
  });
  await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
  try {
    const refused = await download(via(`http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/recording.wav`)).then(
      () => false,
      () => true,
    );
    return { authorizations: seen, refused };
  } finally {
    elsewhere.close();
  }
}
