import { instantsOf, sandboxTimeline } from './sandbox-timeline';

describe('sandbox timeline instants', () => {
  it('puts a call without ring or talk time into one instant, in the order its events happen', () => {
    const instants = instantsOf(sandboxTimeline('answer', 0, 0));
    expect(instants.map((instant) => instant.map((step) => step.type))).toEqual([['ringing', 'answered', 'completed']]);
  });

  it('keeps events that happen at different times in instants of their own', () => {
    const instants = instantsOf(sandboxTimeline('answer', 1000, 4000));
    expect(instants.map((instant) => instant.map((step) => [step.type, step.atMs]))).toEqual([
      [['ringing', 0]],
      [['answered', 1000]],
      [['completed', 5000]],
    ]);
  });

  it('groups only the events that share an instant', () => {
    const instants = instantsOf(sandboxTimeline('answer', 0, 2000));
    expect(instants.map((instant) => instant.map((step) => step.type))).toEqual([['ringing', 'answered'], ['completed']]);
  });

  it('has no instant for a rejected dial', () => {
    expect(instantsOf(sandboxTimeline('reject_dial', 0, 0))).toEqual([]);
  });
});
