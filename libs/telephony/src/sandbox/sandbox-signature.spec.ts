import { randomBytes } from 'node:crypto';
import { SandboxSignature } from './sandbox-signature';

describe('SandboxSignature', () => {
  const signature = new SandboxSignature(randomBytes(32));
  const body = Buffer.from('{"status":"ringing"}');
  const url = 'http://localhost:3000/api/v1/telephony/sandbox/status/1?a=b';

  it('matches what it signed, whatever host the URL names, and nothing else', () => {
    const signed = signature.sign('POST', url, body, 1000);
    expect(signature.matches('post', 'http://10.0.0.7:3000/api/v1/telephony/sandbox/status/1?a=b', body, 1000, signed)).toBe(true);
    expect(signature.matches('POST', url.replace('/1?', '/2?'), body, 1000, signed)).toBe(false);
    expect(signature.matches('POST', url, body, 1001, signed)).toBe(false);
    expect(signature.matches('POST', url, Buffer.from('{}'), 1000, signed)).toBe(false);
  });

  it('matches no signature for a URL that cannot be read, rather than failing', () => {
    expect(signature.matches('POST', 'http://localhost:3000http://x/api/v1/telephony/sandbox/status/1', body, 1000, 'a')).toBe(false);
  });
});
