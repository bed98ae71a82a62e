import { plivoDialError } from './plivo/plivo-errors';
import { twilioDialError } from './twilio/twilio-errors';

/** What a refused dial says reaches the run's log, which customers read: never the account its API path names. */
describe("carriers' refusals as the run's log tells them", () => {
  it("leaves Twilio's account out of a message that quotes the request's path", () => {
    const refusal = twilioDialError(404, {
      code: 20404,
      message: 'The requested resource /2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef/Calls.json was not found',
    });
    expect(refusal.message).toBe('Twilio answered 404 (error 20404): The requested resource /2010-04-01/Accounts/…/Calls.json was not found');
  });

  it("leaves Plivo's auth id out of a message that quotes the request's path", () => {
    const refusal = plivoDialError(404, { error: 'not found: /v1/Account/MAZDQ1ZJIYMDZJNZJJMJ/Call/' });
    expect(refusal.message).toBe('Plivo answered 404: not found: /v1/Account/…/Call/');
  });
});
