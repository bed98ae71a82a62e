import { AppConfig } from '@app/config';
import { PlivoProvider } from './plivo/plivo.provider';
import { TelnyxProvider } from './telnyx/telnyx.provider';
import { TwilioProvider } from './twilio/twilio.provider';
import { VonageProvider } from './vonage/vonage.provider';

describe('accountOf: the carrier account credentials place calls in', () => {
  const config = { carrierApiUrls: { twilio: '', plivo: '', telnyx: '', vonage: '' }, publicBaseUrl: 'https://calls.example.com' } as unknown as AppConfig;

  it.each([
    ['Twilio: the Account SID, in any case', new TwilioProvider(config), { account_sid: 'AC1', auth_token: 't' }, 'ac1'],
    ['Plivo: the Auth ID', new PlivoProvider(config), { auth_id: 'MA1', auth_token: 't' }, 'MA1'],
    ['Telnyx: the webhook public key', new TelnyxProvider(config), { api_key: 'k', connection_id: 'c', public_key: ' pk= ' }, 'pk='],
    ['Vonage: the application, in any case', new VonageProvider(config), { application_id: 'ABC-def', private_key: 'p' }, 'abc-def'],
  ])('%s', (_, provider, credentials, account) => {
    expect(provider.accountOf(credentials)).toBe(account);
    expect(provider.accountOf(null)).toBeNull();
    expect(provider.accountOf({})).toBeNull();
  });

  it('names the same account for another token of it, and another for another account', () => {
    const twilio = new TwilioProvider(config);
    expect(twilio.accountOf({ account_sid: 'AC1', auth_token: 'old' })).toBe(twilio.accountOf({ account_sid: 'AC1', auth_token: 'new' }));
    expect(twilio.accountOf({ account_sid: 'AC1', auth_token: 'old' })).not.toBe(twilio.accountOf({ account_sid: 'AC2', auth_token: 'old' }));
    // Twilio takes a SID's hexadecimal in either case: the same account.
    expect(twilio.accountOf({ account_sid: 'ACabcdef' })).toBe(twilio.accountOf({ account_sid: 'ACABCDEF' }));
  });
});
