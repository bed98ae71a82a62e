export * from './call-events.queue';
export * from './calls.queue';
export * from './job-policies';
export * from './jobs';
export * from './queue-names';
export * from './queue.module';
export * from './redis-client';
export * from './redis-connection';
