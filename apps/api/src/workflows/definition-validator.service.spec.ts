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
});
