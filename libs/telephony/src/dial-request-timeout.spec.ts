import { CarrierError } from './carrier-error';
import { plivoDialError } from './plivo/plivo-errors';
import { telnyxDialError } from './telnyx/telnyx-errors';
import { twilioDialError } from './twilio/twilio-errors';
import { vonageDialError } from './vonage/vonage-errors';

/** Each carrier's classification of its answer to a dial, with a `Retry-After` of 2 s. */
const carriers: Array<[string, (status: number) => CarrierError]> = [
  ['Twilio', (status) => twilioDialError(status, { status, message: 'answered' }, 2000)],
  ['Plivo', (status) => plivoDialError(status, { error: 'answered' }, 2000)],
  ['Telnyx', (status) => telnyxDialError({ status, headers: new Headers({ 'retry-after': '2' }), body: null })],
  ['Vonage', (status) => vonageDialError({ status, headers: new Headers({ 'retry-after': '2' }), body: null })],
];

/**
 * A 408 (Request Timeout) says the server gave up waiting for the request
 * before taking it: no call was placed, so the dial is tried again later, as
 * after a 429, not ended as a rejection.
 */
describe('a dial answered 408 (Request Timeout)', () => {
  it.each(carriers)('%s: not processed, tried again later, after what the carrier asked', (_, classify) => {
    expect(classify(408)).toMatchObject({ permanent: false, notProcessed: true, retryAfterMs: 2000 });
  });

  it.each(carriers)('%s: any other 4xx, a 400 say, is still a rejection retrying cannot fix', (_, classify) => {
    expect(classify(400)).toMatchObject({ permanent: true, notProcessed: true });
  });
});
