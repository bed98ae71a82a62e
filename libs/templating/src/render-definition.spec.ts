import { DefinitionGraph, DefinitionNode } from '@app/persistence';
import { PromptRenderer } from './prompt-renderer';
import { renderDefinition, renderOpening } from './render-definition';

describe('renderOpening', () => {
  const renderer = new PromptRenderer();
  const data = { initial_context: { name: 'Ada' } };
  const graph = (start: Record<string, unknown> | null): DefinitionGraph => ({
    nodes: [
      ...(start ? [{ id: 'start', type: 'startCall', data: start } as DefinitionNode] : []),
      { id: 'agent', type: 'agentNode' as const, data: { prompt: 'Help {{ initial_context.name }} with the booking.' } },
    ],
    edges: [],
  });

  it.each([
    ['the greeting', { greeting: 'Hi {{ initial_context.name }}!', prompt: 'You are a receptionist.' }, 'Hi Ada!'],
    ['the prompt when the greeting renders empty', { greeting: '{{ initial_context.missing }}', prompt: 'Hello {{ initial_context.name }}.' }, 'Hello Ada.'],
    ['the prompt when there is no greeting', { prompt: 'Hello.' }, 'Hello.'],
    ['nothing when the start node has neither', {}, ''],
    ['nothing without a start node', null, ''],
  ])('answers %s, as the whole definition rendered does', async (_case, start, expected) => {
    const definition = graph(start);
    expect(await renderOpening(renderer, definition, data)).toBe(expected);
    expect((await renderDefinition(renderer, definition, data)).opening).toBe(expected);
  });
});
