import { provesAnswered, telnyxLiveCallEvents } from './telnyx-call-state';

describe('telnyxLiveCallEvents', () => {
  const now = Date.parse('2026-11-26T12:00:00.000Z');
  const ago = (seconds: number) => new Date(now - seconds * 1000).toISOString();

  it('counts a call up to a minute old as ringing since its start', () => {
    expect(telnyxLiveCallEvents({ start_time: ago(60), call_duration: 60 }, now)).toEqual([{ type: 'ringing', occurredAt: ago(60) }]);
  });

  it('counts a call alive past the ring timeout and its margin as answered, no later than the timeout', () => {
    const events = telnyxLiveCallEvents({ start_time: ago(61) }, now);

    expect(events).toEqual([
      { type: 'ringing', occurredAt: ago(61) },
      { type: 'answered', occurredAt: ago(31), answerTimeEstimated: true },
    ]);
    expect(provesAnswered(events)).toBe(true);
  });

  it('takes the age from call_duration when start_time is missing, unreadable or ahead of our clock', () => {
    for (const start_time of [undefined, 'not a time', new Date(now + 5000).toISOString()]) {
      const events = telnyxLiveCallEvents({ start_time, call_duration: 120 }, now);
      expect(events.map((event) => event.type)).toEqual(['ringing', 'answered']);
      expect(events[0].occurredAt).toBe(ago(120));
    }
  });

  it('takes the longer of the two ages, whichever of them Telnyx counts from the answer', () => {
    expect(provesAnswered(telnyxLiveCallEvents({ start_time: ago(10), call_duration: 90 }, now))).toBe(true);
    expect(provesAnswered(telnyxLiveCallEvents({ start_time: ago(90), call_duration: 10 }, now))).toBe(true);
  });

  it('counts a call it knows nothing of the age of as ringing since now', () => {
    expect(telnyxLiveCallEvents({ call_duration: 'soon' }, now)).toEqual([{ type: 'ringing', occurredAt: new Date(now).toISOString() }]);
  });
});
