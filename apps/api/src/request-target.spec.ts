import { originForm } from './request-target';

describe('originForm', () => {
  it('keeps a target in origin form as it came, query and escapes included', () => {
    expect(originForm('/api/v1/telephony/plivo/status/42?a=1&b=%20')).toBe('/api/v1/telephony/plivo/status/42?a=1&b=%20');
  });

  it('takes the path and query of a target in absolute form, whatever scheme and host it names', () => {
    expect(originForm('http://x/api/v1/telephony/sandbox/status/1')).toBe('/api/v1/telephony/sandbox/status/1');
    expect(originForm('HTTPS://user@proxy.example:8080/api/v1/telephony/plivo/answer/7?sent=1')).toBe('/api/v1/telephony/plivo/answer/7?sent=1');
    expect(originForm('http://proxy.example?x=1')).toBe('/?x=1');
    expect(originForm('http://proxy.example')).toBe('/');
  });

  it('gives any other target a leading slash, so our base URL and it still make one URL', () => {
    expect(originForm('*')).toBe('/*');
    expect(new URL(`http://localhost:3000${originForm('http:/x')}`).pathname).toBe('/http:/x');
  });
});
