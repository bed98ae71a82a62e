import { Module } from '@nestjs/common';
import { CallEventsQueue, CallEventJob } from '@app/queue';
import { CALL_EVENT_SINK } from './call-event-sink.token';
import { CredentialsCipher } from './credentials-cipher';
import { SandboxProvider } from './sandbox/sandbox.provider';
import { CallEventSink } from './telephony-provider';
import { TelephonyProviders } from './telephony-providers';

/** The providers, their registry and the credentials cipher. Needs `QueueModule` imported by the app. */
@Module({
  providers: [
    {
      provide: CALL_EVENT_SINK,
      inject: [CallEventsQueue],
      useFactory: (queue: CallEventsQueue): CallEventSink => ({
        publish: (event: CallEventJob, delayMs?: number) => queue.enqueueEvent(event, delayMs),
      }),
    },
    SandboxProvider,
    TelephonyProviders,
    CredentialsCipher,
  ],
  exports: [TelephonyProviders, CredentialsCipher],
})
export class TelephonyModule {}
