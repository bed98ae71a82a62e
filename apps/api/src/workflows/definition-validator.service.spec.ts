import { DefinitionGraph, DefinitionNode } from '@app/persistence';
import { DEFINITION_RENDER_LIMITS, DEFINITION_SAVE_RENDER_LIMITS, PromptRenderer, renderDefinition } from '@app/templating';
import { DefinitionValidator } from './definition-validator.service';

describe('DefinitionValidator.assertRenders', () => {
  const renderer = new PromptRenderer();
  const agents = (count: number): DefinitionGraph => ({
    nodes: [
      { id: 'start', type: 'startCall', data: { prompt: 'Hi {{ initial_context.name }}' } } as DefinitionNode,
      ...Array.from({ length: count }, (_, i) => ({ id: `a${i}`, type: 'agentNode' as const, data: { prompt: 'Help.' } })),
    ],
    edges: [],
  });

  it('refuses a definition that takes more than a quarter of what a call may take to render with no call data', async () => {
    // Each template takes 100 ms of `performance.now()` (which the budget reads) and no real time.
    let now = 0;
    const clock = jest.spyOn(performance, 'now').mockImplementation(() => now);
    const timed = {
      render: (...args: Parameters<PromptRenderer['render']>) => {
        now += 100;
        return renderer.render(...args);
      },
    } as unknown as PromptRenderer;
    const validator = new DefinitionValidator(timed);
    try {
      expect(DEFINITION_SAVE_RENDER_LIMITS.timeMs).toBe(DEFINITION_RENDER_LIMITS.timeMs / 4);
      await expect(validator.assertRenders(agents(1))).resolves.toBeUndefined();
      await expect(validator.assertRenders(agents(2))).rejects.toThrow(
        `The definition is not valid: the agent's definition is too costly to render: rendering its templates takes more than ${DEFINITION_SAVE_RENDER_LIMITS.timeMs} ms`,
      );
      // Three times as slow as a saved definition may be, a call would still have rendered it: the margin saving keeps.
      expect((await renderDefinition(timed, agents(2), { initial_context: { name: 'Ada' } })).opening).toBe('Hi Ada');
    } finally {
      clock.mockRestore();
    }
  });

  it('refuses a definition whose templates go past what one render may handle without call data, which every call would fail on', async () => {
    const validator = new DefinitionValidator(renderer);
    const withPrompt = (prompt: string): DefinitionGraph => ({ nodes: [{ id: 'start', type: 'startCall', data: { prompt } } as DefinitionNode], edges: [] });
    for (const prompt of ['{% for i in (1..2000000) %}{% endfor %}Hi', '{{ (1..50001) | where_exp: "i", "true" | size }}']) {
      await expect(validator.assertRenders(withPrompt(prompt))).rejects.toThrow(
        "The definition is not valid: the agent's definition is too costly to render: a template goes past what one render may handle (memory alloc limit exceeded",
      );
      // What a call would have ended with.
      await expect(renderDefinition(renderer, withPrompt(prompt), { initial_context: {} })).rejects.toThrow('memory alloc limit exceeded');
    }
    // Past the bounds only with a call's data: left to the call.
    const items = Array.from({ length: 50_001 }, (_, i) => i);
    const fromData = withPrompt('{{ initial_context.items | where_exp: "i", "true" | size }}');
    await expect(validator.assertRenders(fromData)).resolves.toBeUndefined();
    await expect(renderDefinition(renderer, fromData, { initial_context: { items } })).rejects.toThrow('memory alloc limit exceeded');
  });
});
