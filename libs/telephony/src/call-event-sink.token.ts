/** Injection token of the `CallEventSink` that providers publish status events to. */
export const CALL_EVENT_SINK = Symbol('CALL_EVENT_SINK');
