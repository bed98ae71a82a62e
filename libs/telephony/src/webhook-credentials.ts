import { WebhookRejected } from './carrier-webhooks';

/** The configuration's credentials to check a signature with; a configuration without usable ones refuses the request. */
export function webhookCredentials<T>(carrier: string, read: (credentials: Record<string, unknown> | null) => T, credentials: Record<string, unknown> | null): T {
  try {
    return read(credentials);
  } catch {
    throw new WebhookRejected(403, `The configuration has no usable ${carrier} credentials to check the signature with`);
  }
}
