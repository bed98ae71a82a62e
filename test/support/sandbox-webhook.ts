import { SandboxSignature } from '@app/telephony';
import { LoopbackWebhook } from '../fakes/loopback-http-fake';

/** A sandbox carrier callback to `url`, signed now with the key `key` derives, as the sandbox signs its own. */
export function sandboxSigned(url: string, key: Buffer, body: unknown = { status: 'ringing' }): LoopbackWebhook {
  const rawBody = Buffer.from(JSON.stringify(body));
  const timestamp = Date.now();
  const headers = {
    'content-type': 'application/json',
    'x-sandbox-timestamp': String(timestamp),
    'x-sandbox-signature': new SandboxSignature(key).sign('POST', url, rawBody, timestamp),
  };
  return { method: 'POST', url, headers, rawBody };
}
