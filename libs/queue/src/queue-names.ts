/** Every queue of the system. Keys live under the configured hash-tag prefix. */
export const QueueName = {
  /** One job per run: claim the run and place its call. */
  Calls: 'calls',
  /** Carrier status events, applied to runs by the dialer. */
  CallEvents: 'call-events',
} as const;

export type QueueName = (typeof QueueName)[keyof typeof QueueName];
