import { Injectable } from '@nestjs/common';
import { SandboxProvider } from './sandbox/sandbox.provider';
import { TelephonyProvider } from './telephony-provider';

export const PROVIDER_NAMES = ['sandbox'] as const;
export type ProviderName = (typeof PROVIDER_NAMES)[number];

/** Looks providers up by the name stored in a telephony configuration. */
@Injectable()
export class TelephonyProviders {
  private readonly byName: Map<string, TelephonyProvider>;

  constructor(sandbox: SandboxProvider) {
    this.byName = new Map<string, TelephonyProvider>([[sandbox.name, sandbox]]);
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
