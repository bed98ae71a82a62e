import { Inject, Module } from '@nestjs/common';
import { CallEventsQueue, CallEventJob } from '@app/queue';
import { APP_CONFIG, AppConfig } from '@app/config';
import { AgentSessionTokens } from './agent-session-tokens';
import { allowCarrierStorageNetworks } from './carrier-http';
import { CALL_EVENT_SINK } from './call-event-sink.token';
import { CredentialsCipher } from './credentials-cipher';
import { PlivoProvider } from './plivo/plivo.provider';
import { SandboxProvider } from './sandbox/sandbox.provider';
import { TelnyxProvider } from './telnyx/telnyx.provider';
import { TwilioProvider } from './twilio/twilio.provider';
import { VonageProvider } from './vonage/vonage.provider';
import { StoredCredentialsCheck } from './stored-credentials-check';
import { CallEventSink } from './telephony-provider';
import { TelephonyProviders } from './telephony-providers';

/** The providers, their registry, the credentials cipher and its check at start. Needs `QueueModule` imported by the app. */
@Module({
  providers: [
    {
      provide: CALL_EVENT_SINK,
      inject: [CallEventsQueue],
      useFactory: (queue: CallEventsQueue): CallEventSink => ({
        publish: (event: CallEventJob, delayMs?: number) => queue.enqueueEvent(event, delayMs),
      }),
    },
    {
      provide: AgentSessionTokens,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => new AgentSessionTokens(config.secretsKey),
    },
    SandboxProvider,
    TwilioProvider,
    TelnyxProvider,
    VonageProvider,
    PlivoProvider,
    TelephonyProviders,
    CredentialsCipher,
    StoredCredentialsCheck,
  ],
  exports: [TelephonyProviders, CredentialsCipher, AgentSessionTokens, StoredCredentialsCheck],
})
export class TelephonyModule {
  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    allowCarrierStorageNetworks(config.carrierStorageNetworks);
  }
}
