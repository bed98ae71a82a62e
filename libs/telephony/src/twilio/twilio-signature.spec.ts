import { twilioSignature, twilioSignatureMatches } from './twilio-signature';

/**
 * The worked example of Twilio's request-validation documentation, as pinned
 * by Twilio's own helper libraries (twilio-python, twilio-php, twilio-csharp
 * RequestValidator tests): auth token 12345, this URL, these POST fields.
 */
const DOC_TOKEN = '12345';
const DOC_URL = 'https://mycompany.com/myapp.php?foo=1&bar=2';
const DOC_FIELDS: Array<[string, string]> = [
  ['CallSid', 'CA1234567890ABCDE'],
  ['Caller', '+14158675309'],
  ['Digits', '1234'],
  ['From', '+14158675309'],
  ['To', '+18005551212'],
];
const DOC_SIGNATURE = 'RSOYDt4T1cUTdK1PDd93/VVr8B8=';

describe('Twilio request signature', () => {
  it('reproduces the signature of Twilio\'s documented example', () => {
    expect(twilioSignature(DOC_TOKEN, DOC_URL, DOC_FIELDS)).toBe(DOC_SIGNATURE);
  });

  it('does not depend on the order the fields arrive in', () => {
    expect(twilioSignature(DOC_TOKEN, DOC_URL, [...DOC_FIELDS].reverse())).toBe(DOC_SIGNATURE);
  });

  it('signs a repeated field once per distinct value, sorted (the helper libraries\' duplicate-value vector)', () => {
    const fields: Array<[string, string]> = [
      ['Sid', 'CA123'],
      ['SidAccount', 'AC123'],
      ['Digits', '5678'],
      ['Digits', '1234'],
      ['Digits', '1234'],
    ];
    expect(twilioSignature(DOC_TOKEN, DOC_URL, fields)).toBe('IK+Dwps556ElfBT0I3Rgjkr1wJU=');
  });

  it('accepts the documented signature and rejects it once any input changes', () => {
    expect(twilioSignatureMatches(DOC_TOKEN, DOC_URL, DOC_FIELDS, DOC_SIGNATURE)).toBe(true);
    expect(twilioSignatureMatches('54321', DOC_URL, DOC_FIELDS, DOC_SIGNATURE)).toBe(false);
    expect(twilioSignatureMatches(DOC_TOKEN, `${DOC_URL}&baz=3`, DOC_FIELDS, DOC_SIGNATURE)).toBe(false);
    const tampered = DOC_FIELDS.map(([name, value]): [string, string] => [name, name === 'Digits' ? '9999' : value]);
    expect(twilioSignatureMatches(DOC_TOKEN, DOC_URL, tampered, DOC_SIGNATURE)).toBe(false);
    expect(twilioSignatureMatches(DOC_TOKEN, DOC_URL, DOC_FIELDS, 'RSOYDt4T1cUTdK1PDd93/VVr8B8')).toBe(false);
    expect(twilioSignatureMatches(DOC_TOKEN, DOC_URL, DOC_FIELDS, '')).toBe(false);
  });

  it('accepts a URL signed with or without its default port, as Twilio\'s helper libraries do', () => {
    const withPort = 'https://mycompany.com:443/myapp.php?foo=1&bar=2';
    const signedWithPort = twilioSignature(DOC_TOKEN, withPort, DOC_FIELDS);
    expect(twilioSignatureMatches(DOC_TOKEN, DOC_URL, DOC_FIELDS, signedWithPort)).toBe(true);
    expect(twilioSignatureMatches(DOC_TOKEN, DOC_URL, DOC_FIELDS, DOC_SIGNATURE)).toBe(true);
    // Another port is another URL.
    const otherPort = twilioSignature(DOC_TOKEN, 'https://mycompany.com:8443/myapp.php?foo=1&bar=2', DOC_FIELDS);
    expect(twilioSignatureMatches(DOC_TOKEN, DOC_URL, DOC_FIELDS, otherPort)).toBe(false);
  });

  it('signs values as sent, not form-encoded', () => {
    const fields: Array<[string, string]> = [['Body', 'hello world+1 & more']];
    const encodedInstead: Array<[string, string]> = [['Body', 'hello+world%2B1+%26+more']];
    expect(twilioSignature(DOC_TOKEN, DOC_URL, fields)).not.toBe(twilioSignature(DOC_TOKEN, DOC_URL, encodedInstead));
  });
});
