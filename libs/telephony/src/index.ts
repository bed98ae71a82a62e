export * from './call-event-sink.token';
export * from './carrier-error';
export * from './credentials-cipher';
export * from './sandbox/sandbox-outcome';
export * from './sandbox/sandbox.provider';
export * from './telephony-provider';
export * from './telephony-providers';
export * from './telephony.module';
