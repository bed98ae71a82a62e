import { createHmac, createPublicKey, verify } from 'node:crypto';
import { AppConfig } from '@app/config';
import { VonageFake } from '../../../../test/fakes/vonage-fake';
import { WebhookRejected, WebhookRequest } from '../carrier-webhooks';
import { decodeJwt, hasValidHs256Signature, signVonageApplicationJwt } from './vonage-jwt';
import { readVonageCredentials } from './vonage-credentials';
import { VonageProvider } from './vonage.provider';

const URL = 'https://calls.example.com/api/v1/telephony/vonage/status/42';

describe('Vonage JWTs', () => {
  it('verifies HS256 as pinned by the RFC 7515 Appendix A.1 example', () => {
    const key = Buffer.from('AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow', 'base64url');
    const token =
      'eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9' +
      '.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ' +
      '.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';

    const jwt = decodeJwt(token)!;

    expect(jwt.claims).toEqual({ iss: 'joe', exp: 1300819380, 'http://example.com/is_root': true });
    expect(hasValidHs256Signature(jwt, key)).toBe(true);
    expect(hasValidHs256Signature(jwt, Buffer.from('another key'))).toBe(false);
  });

  it('signs the API JWT RS256 with application_id, iat, jti and a short exp', () => {
    const fake = new VonageFake();
    const credentials = readVonageCredentials(fake.credentials)!;

    const token = signVonageApplicationJwt(credentials.applicationId, credentials.privateKey, 1_760_000_000_000);

    const jwt = decodeJwt(token)!;
    expect(jwt.header).toEqual({ alg: 'RS256', typ: 'JWT' });
    expect(jwt.claims).toEqual({ application_id: fake.applicationId, iat: 1_760_000_000, exp: 1_760_000_300, jti: expect.any(String) });
    expect(verify('sha256', Buffer.from(jwt.signingInput), createPublicKey(credentials.privateKey), jwt.signature)).toBe(true);
  });
});

describe('Vonage webhook signatures', () => {
  const fake = new VonageFake();
  const provider = new VonageProvider({ carrierApiUrls: { vonage: 'http://127.0.0.1:9' } } as unknown as AppConfig);
  const body = { uuid: 'aaaaaaaa-bbbb-cccc-dddd-0123456789ab', status: 'answered', timestamp: '2020-01-01T14:00:00.000Z' };
  const nowSeconds = 1_760_000_000;
  const nowMs = nowSeconds * 1000;

  function rejection(request: WebhookRequest, credentials: Record<string, unknown> | null = fake.credentials): WebhookRejected {
    try {
      provider.verifyWebhook(request, credentials, nowMs);
    } catch (error) {
      if (error instanceof WebhookRejected) return error;
      throw error;
    }
    throw new Error('the webhook was accepted');
  }

  function withToken(request: WebhookRequest, header: Record<string, unknown>, claims: Record<string, unknown>, secret = fake.signatureSecret) {
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const input = `${encode(header)}.${encode(claims)}`;
    const signature = header.alg === 'none' ? '' : createHmac('sha256', secret).update(input).digest('base64url');
    return { ...request, headers: { ...request.headers, authorization: `Bearer ${input}.${signature}` } };
  }

  function claimsOf(request: WebhookRequest): Record<string, unknown> {
    return decodeJwt(String(request.headers.authorization).slice('Bearer '.length))!.claims;
  }

  it('accepts a webhook whose JWT is signed with the signature secret and whose payload_hash matches', () => {
    const request = fake.signedRequest(URL, body, { iatSeconds: nowSeconds });

    expect(() => provider.verifyWebhook(request, fake.credentials, nowMs)).not.toThrow();
    expect(claimsOf(request)).toMatchObject({ iss: 'Vonage', api_key: fake.apiKey, application_id: fake.applicationId });
  });

  it('accepts a JWT issued 4 minutes 59 seconds ago', () => {
    expect(() => provider.verifyWebhook(fake.signedRequest(URL, body, { iatSeconds: nowSeconds - 299 }), fake.credentials, nowMs)).not.toThrow();
  });

  it('answers 401 when there is no Authorization header, or it is not a Bearer token', () => {
    const request = fake.signedRequest(URL, body, { iatSeconds: nowSeconds });
    const { authorization: _authorization, ...unsigned } = request.headers;

    expect(rejection({ ...request, headers: unsigned }).status).toBe(401);
    expect(rejection({ ...request, headers: { ...request.headers, authorization: 'Basic dXNlcjpwYXNz' } }).status).toBe(401);
  });

  it('answers 403 to a JWT signed with another secret', () => {
    expect(rejection(fake.signedRequest(URL, body, { iatSeconds: nowSeconds, secret: 'not-the-secret' })).status).toBe(403);
  });

  it('answers 403 when the body does not match payload_hash', () => {
    const request = fake.signedRequest(URL, body, { iatSeconds: nowSeconds });
    const tampered = { ...request, rawBody: Buffer.from(JSON.stringify({ ...body, status: 'completed' })) };

    const error = rejection(tampered);
    expect(error.status).toBe(403);
    expect(error.message).toMatch(/body/);
  });

  it('answers 403 to a replay more than 5 minutes old, and to a JWT from the future', () => {
    expect(rejection(fake.signedRequest(URL, body, { iatSeconds: nowSeconds - 301 })).message).toMatch(/replay/);
    expect(rejection(fake.signedRequest(URL, body, { iatSeconds: nowSeconds + 301 })).status).toBe(403);
  });

  it('answers 403 to an unsigned "alg: none" token and to other algorithms', () => {
    const request = fake.signedRequest(URL, body, { iatSeconds: nowSeconds });
    const claims = claimsOf(request);

    expect(rejection(withToken(request, { alg: 'none', typ: 'JWT' }, claims)).status).toBe(403);
    expect(rejection(withToken(request, { alg: 'HS512', typ: 'JWT' }, claims)).status).toBe(403);
  });

  it('answers 403 to a JWT without iat or without payload_hash, or for another application', () => {
    const request = fake.signedRequest(URL, body, { iatSeconds: nowSeconds });
    const { iat: _iat, ...noIat } = claimsOf(request);
    const { payload_hash: _hash, ...noHash } = claimsOf(request);

    expect(rejection(withToken(request, { alg: 'HS256', typ: 'JWT' }, noIat)).status).toBe(403);
    expect(rejection(withToken(request, { alg: 'HS256', typ: 'JWT' }, noHash)).status).toBe(403);
    expect(rejection(withToken(request, { alg: 'HS256', typ: 'JWT' }, { ...claimsOf(request), application_id: '00000000-0000-0000-0000-000000000000' })).message).toMatch(
      /another application/,
    );
  });

  it('answers 403 to a malformed token, and when the configuration has no signature secret', () => {
    const request = fake.signedRequest(URL, body, { iatSeconds: nowSeconds });

    expect(rejection({ ...request, headers: { ...request.headers, authorization: 'Bearer not.a.jwt' } }).status).toBe(403);
    expect(rejection(request, null).status).toBe(403);
  });

  it("names a delivery by its JWT's jti: the same for an exact copy, different for any other token", () => {
    const request = fake.signedRequest(URL, body, { iatSeconds: nowSeconds });
    const key = provider.replayKey(request);

    expect(key).toBe(`vonage:jti:${claimsOf(request).jti}`);
    expect(provider.replayKey({ ...request, headers: { ...request.headers } })).toBe(key);
    // The same body signed again gets a new jti: a second delivery, not a replay.
    expect(provider.replayKey(fake.signedRequest(URL, body, { iatSeconds: nowSeconds }))).not.toBe(key);
  });

  it('names a delivery whose JWT has no jti by the token itself, and an unsigned one not at all', () => {
    const request = fake.signedRequest(URL, body, { iatSeconds: nowSeconds });
    const { jti: _jti, ...claims } = claimsOf(request);
    const withoutJti = withToken(request, { alg: 'HS256', typ: 'JWT' }, claims);
    const otherToken = withToken(request, { alg: 'HS256', typ: 'JWT' }, { ...claims, iat: nowSeconds - 1 });

    expect(provider.replayKey(withoutJti)).toMatch(/^vonage:token:[0-9a-f]{64}$/);
    expect(provider.replayKey({ ...withoutJti })).toBe(provider.replayKey(withoutJti));
    expect(provider.replayKey(otherToken)).not.toBe(provider.replayKey(withoutJti));
    const { authorization: _authorization, ...unsigned } = request.headers;
    expect(provider.replayKey({ ...request, headers: unsigned })).toBeNull();
  });
});
