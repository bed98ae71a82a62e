import { CallEventJob, callEventJobId, eventsOf } from './jobs';

const event = (type: CallEventJob['type']): CallEventJob => ({
  runId: 7,
  organizationId: 1,
  provider: 'sandbox',
  providerCallId: 'SB-1',
  type,
  occurredAt: '2026-01-01T00:00:00.000Z',
});

describe('call-events jobs', () => {
  it('answers a lone event as the only one of its job', () => {
    expect(eventsOf(event('ringing'))).toEqual([event('ringing')]);
  });

  it('answers the events that followed at the same instant after the first, in order', () => {
    const job = { ...event('ringing'), following: [event('answered'), event('completed')], nothingBetween: true };
    // The events answered carry none of the job's own marks.
    expect(eventsOf(job)).toStrictEqual([event('ringing'), event('answered'), event('completed')]);
  });

  it('names a job after its run and its first event, so a repeated report collapses', () => {
    const job: CallEventJob = { ...event('ringing'), following: [event('completed')] };
    expect(callEventJobId(job)).toBe('run-7-ringing');
  });
});
