import { Injectable } from '@nestjs/common';
import { PlivoProvider } from './plivo/plivo.provider';
import { SandboxProvider } from './sandbox/sandbox.provider';
import { TelephonyProvider } from './telephony-provider';
import { TelnyxProvider } from './telnyx/telnyx.provider';
import { TwilioProvider } from './twilio/twilio.provider';
import { VonageProvider } from './vonage/vonage.provider';

export const PROVIDER_NAMES = ['sandbox', 'twilio', 'telnyx', 'vonage', 'plivo'] as const;
export type ProviderName = (typeof PROVIDER_NAMES)[number];

/** Looks providers up by the name stored in a telephony configuration. */
@Injectable()
export class TelephonyProviders {
  private readonly byName: Map<string, TelephonyProvider>;

  constructor(sandbox: SandboxProvider, twilio: TwilioProvider, telnyx: TelnyxProvider, vonage: VonageProvider, plivo: PlivoProvider) {
    this.byName = new Map<string, TelephonyProvider>(
      [sandbox, twilio, telnyx, vonage, plivo].map((provider) => [provider.name, provider]),
    );
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  get(name: string): TelephonyProvider {
    const provider = this.byName.get(name);
    if (!provider) throw new Error(`Unknown telephony provider "${name}"`);
    return provider;
  }
}
