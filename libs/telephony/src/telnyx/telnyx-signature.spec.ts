import { AppConfig } from '@app/config';
import { TelnyxFake } from '../../../../test/fakes/telnyx-fake';
import { WebhookRejected, WebhookRequest } from '../carrier-webhooks';
import { verifyEd25519 } from './telnyx-signature';
import { TelnyxProvider } from './telnyx.provider';

const URL = 'https://calls.example.com/api/v1/telephony/telnyx/status/42';

describe('Telnyx webhook signatures', () => {
  const fake = new TelnyxFake();
  const provider = new TelnyxProvider({ carrierApiUrls: { telnyx: 'http://127.0.0.1:9' } } as unknown as AppConfig);
  const body = fake.event('call.answered', { call_control_id: 'v3:abc', client_state: 'NDI=' });
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

  describe('Ed25519 verification, pinned to the RFC 8032 §7.1 test vectors', () => {
    it('TEST 1: the empty message', () => {
      const publicKey = Buffer.from('d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a', 'hex');
      const signature = Buffer.from(
        'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
        'hex',
      );

      expect(verifyEd25519(Buffer.alloc(0), signature, publicKey)).toBe(true);
      expect(verifyEd25519(Buffer.from([0]), signature, publicKey)).toBe(false);
    });

    it('TEST 2: the one-byte message 0x72', () => {
      const publicKey = Buffer.from('3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c', 'hex');
      const signature = Buffer.from(
        '92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00',
        'hex',
      );

      expect(verifyEd25519(Buffer.from([0x72]), signature, publicKey)).toBe(true);
      expect(verifyEd25519(Buffer.from([0x73]), signature, publicKey)).toBe(false);
    });

    it('rejects a key that is not 32 bytes', () => {
      expect(verifyEd25519(Buffer.alloc(0), Buffer.alloc(64), Buffer.alloc(31))).toBe(false);
    });
  });

  it('accepts a webhook signed over "timestamp|body" with the account key', () => {
    const request = fake.signedRequest(URL, body, { timestampSeconds: nowSeconds });

    expect(() => provider.verifyWebhook(request, fake.credentials, nowMs)).not.toThrow();
  });

  it('accepts a signature 4 minutes 59 seconds old', () => {
    const request = fake.signedRequest(URL, body, { timestampSeconds: nowSeconds - 299 });

    expect(() => provider.verifyWebhook(request, fake.credentials, nowMs)).not.toThrow();
  });

  it('answers 401 when the signature header is missing', () => {
    const request = fake.signedRequest(URL, body, { timestampSeconds: nowSeconds });
    delete (request.headers as Record<string, string | undefined>)['telnyx-signature-ed25519'];

    expect(rejection(request).status).toBe(401);
  });

  it('answers 401 when the timestamp header is missing', () => {
    const request = fake.signedRequest(URL, body, { timestampSeconds: nowSeconds });
    delete (request.headers as Record<string, string | undefined>)['telnyx-timestamp'];

    expect(rejection(request).status).toBe(401);
  });

  it('answers 403 to a request signed with another key', () => {
    const stranger = new TelnyxFake();

    expect(rejection(stranger.signedRequest(URL, body, { timestampSeconds: nowSeconds })).status).toBe(403);
  });

  it('answers 403 when the body was changed after signing', () => {
    const request = fake.signedRequest(URL, body, { timestampSeconds: nowSeconds });
    const tampered = { ...request, rawBody: Buffer.from(request.rawBody.toString().replace('call.answered', 'call.hangup')) };

    expect(rejection(tampered).status).toBe(403);
  });

  it('answers 403 when the timestamp was changed after signing', () => {
    const request = fake.signedRequest(URL, body, { timestampSeconds: nowSeconds - 10 });

    expect(rejection({ ...request, headers: { ...request.headers, 'telnyx-timestamp': String(nowSeconds) } }).status).toBe(403);
  });

  it('answers 403 to a replay more than 5 minutes old', () => {
    const request = fake.signedRequest(URL, body, { timestampSeconds: nowSeconds - 301 });

    const error = rejection(request);
    expect(error.status).toBe(403);
    expect(error.message).toMatch(/replay/);
  });

  it('answers 403 to a timestamp more than 5 minutes ahead', () => {
    expect(rejection(fake.signedRequest(URL, body, { timestampSeconds: nowSeconds + 301 })).status).toBe(403);
  });

  it('answers 403 to a malformed signature or timestamp', () => {
    const request = fake.signedRequest(URL, body, { timestampSeconds: nowSeconds });

    expect(rejection({ ...request, headers: { ...request.headers, 'telnyx-signature-ed25519': 'bm90IGEgc2lnbmF0dXJl' } }).status).toBe(403);
    expect(rejection({ ...request, headers: { ...request.headers, 'telnyx-timestamp': 'yesterday' } }).status).toBe(403);
  });

  it('answers 403 when the configuration has no public key to verify with', () => {
    const request = fake.signedRequest(URL, body, { timestampSeconds: nowSeconds });

    expect(rejection(request, null).status).toBe(403);
    expect(rejection(request, { api_key: fake.apiKey, connection_id: fake.connectionId }).status).toBe(403);
  });

  it('names a delivery by what is signed: the same for any copy, different for another body or time', () => {
    const request = fake.signedRequest(URL, body, { timestampSeconds: nowSeconds });
    const key = provider.replayKey(request);

    expect(key).toMatch(/^telnyx:/);
    expect(provider.replayKey({ ...request, headers: { ...request.headers } })).toBe(key);
    // A copy whose signature is written differently (no padding) is the same delivery.
    const unpadded = { ...request, headers: { ...request.headers, 'telnyx-signature-ed25519': request.headers['telnyx-signature-ed25519']!.replace(/=+$/, '') } };
    expect(provider.replayKey(unpadded)).toBe(key);
    expect(provider.replayKey(fake.signedRequest(URL, { ...body, meta: { ...body.meta, attempt: 2 } }, { timestampSeconds: nowSeconds }))).not.toBe(key);
    expect(provider.replayKey(fake.signedRequest(URL, body, { timestampSeconds: nowSeconds + 1 }))).not.toBe(key);
    const { 'telnyx-signature-ed25519': _signature, ...unsigned } = request.headers;
    expect(provider.replayKey({ ...request, headers: unsigned })).toBeNull();
  });
});
