import { PlivoFake } from '../../../../test/fakes/plivo-fake';
import { plivoSignatureMatches, plivoSignatureV3, plivoSignedBase } from './plivo-signature';

/**
 * Plivo's published V3 test vectors (the plivo-go SDK's utils tests,
 * TestValidateSignatureV3Pass1..4): a real outbound-call callback, signed for
 * a URL with and without a query, as POST and as GET.
 */
const TOKEN = 'Y2Q2ZDgxZmY5YWRiOTI5YmQ1Njg0MTAxZWIyOTc4';
const NONCE = '31627761595286130198';
const WITH_QUERY = 'https://plivobin.non-prod.plivops.com/api/v1/validate_signature03.xml/?a=b&c=d';
const WITHOUT_QUERY = 'https://plivobin.non-prod.plivops.com/api/v1/validate_signature03.xml';
const PARAMS: Array<[string, string]> = Object.entries({
  Direction: 'outbound',
  From: '19792014278',
  ALegUUID: '3e82ae9d-2c78-4d85-b1a4-6eae7dbafb36',
  CallStatus: 'in-progress',
  BillRate: '0.002',
  ParentAuthID: 'MANWVLYTK4ZWU1YTY4QA',
  To: 'sip:PlivoSignature382029104058171078704104@phone-qa.voice.plivodev.com',
  ALegRequestUUID: '3e82ae9d-2c78-4d85-b1a4-6eae7dbafb36',
  CallUUID: '3e82ae9d-2c78-4d85-b1a4-6eae7dbafb36',
  RequestUUID: '3e82ae9d-2c78-4d85-b1a4-6eae7dbafb36',
  'SIP-H-To': '<sip:PlivoSignature382029104058171078704104@52.9.11.55;transport=udp>;tag=1',
  SessionStart: '2020-04-08 11:34:33.238707',
  Event: 'StartApp',
});
const VECTORS = [
  ['POST', WITH_QUERY, 'k7Pusd4OxCIjR5IfA9iedDNu/h/gbdYqdzG/MiYtd1c='],
  ['GET', WITH_QUERY, 'UBq8jAtd32wR8EK9VgxbBn4n5rpI/l1H9iN4WfSEHFQ='],
  ['POST', WITHOUT_QUERY, 'iAjE5QqI37mbkYe4w3jTMudqEzbDufdqi7sYwTu64e0='],
  ['GET', WITHOUT_QUERY, 'i/MQsaQSAd6fiKhOh2qeeeLHZ9faldADSb3/7+Akfbc='],
] as const;

describe('Plivo signature V3', () => {
  it.each(VECTORS)('reproduces Plivo\'s published %s vector for %s', (method, url, signature) => {
    expect(plivoSignatureV3(TOKEN, method, url, PARAMS, NONCE)).toBe(signature);
    expect(plivoSignatureMatches(TOKEN, method, url, PARAMS, NONCE, signature)).toBe(true);
  });

  it.each(VECTORS)('signs exactly like the fake carrier does (%s %s)', (method, url, signature) => {
    const fake = new PlivoFake({ authToken: TOKEN });
    expect(fake.sign(url, PARAMS, NONCE, { method })).toBe(signature);
  });

  it('builds the signed string the way Plivo documents: sorted query, a dot, then sorted body fields', () => {
    expect(plivoSignedBase('POST', 'https://a.example/p/?z=1&a=2', [['B', '2'], ['A', '1']])).toBe('https://a.example/p/?a=2&z=1.A1B2');
    expect(plivoSignedBase('POST', 'https://a.example/p', [['B', '2'], ['A', '1']])).toBe('https://a.example/p?A1B2');
    expect(plivoSignedBase('POST', 'https://a.example/p', [])).toBe('https://a.example/p');
    expect(plivoSignedBase('GET', 'https://a.example/p?b=2', [['a', '1']])).toBe('https://a.example/p?a=1&b=2');
  });

  it('signs every value of a repeated name, sorted, with those of the query for a GET', () => {
    const repeated: [string, string][] = [['b', '2'], ['a', '9'], ['b', '1'], ['a', '3']];
    expect(plivoSignedBase('POST', 'https://a.example/p?q=2&q=1', repeated)).toBe('https://a.example/p?q=1&q=2.a3a9b1b2');
    expect(plivoSignedBase('GET', 'https://a.example/p?b=0&a=5', repeated)).toBe('https://a.example/p?a=3&a=5&a=9&b=0&b=1&b=2');
  });

  it('reads a body of one name repeated across a whole webhook body in time linear in its length', () => {
    // 32,000 repeats fill the webhook body limit (64 KiB). Copying a name's values at each repeat, quadratic, took 8.7 s
    // on this machine; in place it takes a few milliseconds. The bound only tells the two apart, with room for a busy machine.
    const params = Array.from({ length: 32_000 }, (): [string, string] => ['a', '']);
    const started = performance.now();
    const base = plivoSignedBase('POST', 'https://a.example/p', params);
    const elapsedMs = performance.now() - started;
    expect(base).toBe(`https://a.example/p?${'a'.repeat(32_000)}`);
    expect(elapsedMs).toBeLessThan(2_000);
  });

  it('rejects the vector once the token, nonce, URL or a field changes', () => {
    const [method, url, signature] = VECTORS[0];
    expect(plivoSignatureMatches(`${TOKEN}x`, method, url, PARAMS, NONCE, signature)).toBe(false);
    expect(plivoSignatureMatches(TOKEN, method, url, PARAMS, `${NONCE}1`, signature)).toBe(false);
    expect(plivoSignatureMatches(TOKEN, method, `${url}&e=f`, PARAMS, NONCE, signature)).toBe(false);
    const tampered = PARAMS.map(([name, value]): [string, string] => [name, name === 'CallStatus' ? 'completed' : value]);
    expect(plivoSignatureMatches(TOKEN, method, url, tampered, NONCE, signature)).toBe(false);
  });

  it('matches no signature for a URL that cannot be read, rather than failing', () => {
    const [method, , signature] = VECTORS[0];
    expect(plivoSignatureMatches(TOKEN, method, 'http://localhost:3000http://x/api/v1/telephony/plivo/status/1', PARAMS, NONCE, signature)).toBe(
      false,
    );
  });

  it('accepts any of several comma-separated signatures (one per active Auth Token)', () => {
    const [method, url, signature] = VECTORS[2];
    expect(plivoSignatureMatches(TOKEN, method, url, PARAMS, NONCE, `bm90LXRoaXMtb25l,${signature}`)).toBe(true);
    expect(plivoSignatureMatches(TOKEN, method, url, PARAMS, NONCE, 'bm90LXRoaXMtb25l,b3Itb25l')).toBe(false);
    expect(plivoSignatureMatches(TOKEN, method, url, PARAMS, NONCE, '')).toBe(false);
  });
});
