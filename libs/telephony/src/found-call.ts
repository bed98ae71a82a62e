import { WebhookEvent } from './carrier-webhooks';
import { CallLookup, CallReference } from './telephony-provider';

/** A look-up that found the call: its events, tied to our run and organization. */
export function foundCall(call: CallReference, provider: string, providerCallId: string, events: WebhookEvent[]): CallLookup {
  return {
    kind: 'found',
    providerCallId,
    events: events.map((event) => ({
      ...event,
      runId: call.runId,
      organizationId: call.organizationId,
      provider,
      providerCallId,
    })),
  };
}
