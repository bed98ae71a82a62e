import { AGENT_DATA_LIMITS } from '@app/persistence';
import { sandboxConversation } from './sandbox-conversation';

describe('sandboxConversation', () => {
  it("opens with the agent's opening as it is when it fits in a turn", () => {
    const turns = sandboxConversation('Hi Ada!', 4000);
    expect(turns.map((turn) => [turn.speaker, turn.text])).toEqual([
      ['agent', 'Hi Ada!'],
      ['user', 'Hello, yes, speaking.'],
      ['agent', 'Thank you for your time. Goodbye!'],
      ['user', 'Goodbye.'],
    ]);
    expect(turns.map((turn) => [turn.start_ms, turn.end_ms])).toEqual([
      [0, 800],
      [1000, 1800],
      [2000, 2800],
      [3000, 3800],
    ]);
  });

  it('says a longer opening up to the length a reported turn may have, without cutting a character in two', () => {
    const limit = AGENT_DATA_LIMITS.turnChars;
    expect(sandboxConversation('a'.repeat(limit + 500), 0)[0].text).toBe('a'.repeat(limit));
    // An emoji (two UTF-16 units) across the limit is left out whole: half of it could not be stored.
    const opening = `${'a'.repeat(limit - 1)}😀 and more`;
    const said = sandboxConversation(opening, 0)[0].text;
    expect(said).toBe('a'.repeat(limit - 1));
    expect(sandboxConversation(`${'a'.repeat(limit - 2)}😀`, 0)[0].text).toBe(`${'a'.repeat(limit - 2)}😀`);
  });
});
