import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

export const SANDBOX_SIGNATURE_HEADER = 'x-sandbox-signature';
export const SANDBOX_TIMESTAMP_HEADER = 'x-sandbox-timestamp';
/** A signed request older (or further in the future) than this is a replay. */
export const SANDBOX_SIGNATURE_TOLERANCE_MS = 5 * 60 * 1000;

/**
 * How the sandbox carrier signs its callbacks, like real carriers do: an
 * HMAC-SHA256 over `timestamp.METHOD path?query.body` with a key derived
 * from SECRETS_KEY. The host is left out so the dialer may reach the API by
 * an internal address.
 */
export class SandboxSignature {
  private readonly key: Buffer;

  constructor(secretsKey: Buffer) {
    this.key = Buffer.from(hkdfSync('sha256', secretsKey, Buffer.alloc(0), 'sandbox-carrier-webhooks', 32));
  }

  sign(method: string, url: string, body: Buffer, timestampMs: number): string {
    const target = new URL(url);
    return createHmac('sha256', this.key)
      .update(`${timestampMs}.${method.toUpperCase()} ${target.pathname}${target.search}.`)
      .update(body)
      .digest('base64url');
  }

  /** False also for a URL that cannot be read: nothing was signed for it. */
  matches(method: string, url: string, body: Buffer, timestampMs: number, signature: string): boolean {
    if (!URL.canParse(url)) return false;
    const expected = Buffer.from(this.sign(method, url, body, timestampMs));
    const given = Buffer.from(signature);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }
}
