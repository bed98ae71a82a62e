import { DefinitionGraph, DefinitionNode } from '@app/persistence';
import { PromptRenderer } from './prompt-renderer';
import { DEFINITION_RENDER_LIMITS, DefinitionRenderLimitError, renderDefinition, renderOpening } from './render-definition';

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
    // Its author chose to say nothing for this call: the prompt, the agent's instructions, is not read out instead.
    ['nothing when the greeting renders empty', { greeting: '{% if initial_context.vip %}Welcome back!{% endif %}', prompt: 'Secret notes on {{ initial_context.name }}.' }, ''],
    ['the prompt when there is no greeting', { prompt: 'Hello.' }, 'Hello.'],
    ['the prompt when the greeting is blank', { greeting: '  ', prompt: 'Hello.' }, 'Hello.'],
    ['nothing when the start node has neither', {}, ''],
    ['nothing without a start node', null, ''],
  ])('answers %s, as the whole definition rendered does', async (_case, start, expected) => {
    const definition = graph(start);
    expect(await renderOpening(renderer, definition, data)).toBe(expected);
    expect((await renderDefinition(renderer, definition, data)).opening).toBe(expected);
  });
});

describe('renderDefinition: one budget for the whole definition', () => {
  const renderer = new PromptRenderer();
  const data = { initial_context: { name: 'Ada' } };
  const agents = (count: number, prompt: string): DefinitionGraph => ({
    nodes: [
      { id: 'start', type: 'startCall', data: { prompt: 'Hi {{ initial_context.name }}' } } as DefinitionNode,
      ...Array.from({ length: count }, (_, i) => ({ id: `a${i}`, type: 'agentNode' as const, data: { prompt } })),
    ],
    edges: [],
  });
  /**
   * The renderer, on a clock the test moves: each render takes `costMs` of
   * `performance.now()` (which the budget and Liquid read) and no real time,
   * so what is checked does not depend on how fast or busy the machine is.
   * `calls` lists the renders, and whatever else a test notes there, in order.
   */
  function onTestClock(costMs: number) {
    let now = 0;
    const calls: string[] = [];
    const clock = jest.spyOn(performance, 'now').mockImplementation(() => now);
    const render = jest.fn(async (...args: Parameters<PromptRenderer['render']>) => {
      now += costMs;
      calls.push('render');
      return renderer.render(...args);
    });
    return { timed: { render } as unknown as PromptRenderer, render, calls, restore: () => clock.mockRestore() };
  }

  it('renders an ordinary definition as before', async () => {
    // The production budget on the real clock: the first render of a process compiles Liquid's code, which on a busy
    // machine once took past 50 ms (the budget's own refusals are checked on the test clock below).
    const limits = { timeMs: DEFINITION_RENDER_LIMITS.timeMs, chars: 100 };
    const rendered = await renderDefinition(renderer, agents(2, 'Help {{ initial_context.name }}.'), data, limits);
    expect(rendered.nodes.map((node) => node.prompt)).toEqual(['Hi Ada', 'Help Ada.', 'Help Ada.']);
  });

  it('refuses a definition whose templates, each within its own limits, take longer than the budget together', async () => {
    const costMs = 10;
    const budgetMs = 100;
    const { timed, render, restore } = onTestClock(costMs);
    try {
      const rendering = renderDefinition(timed, agents(200, 'Help {{ initial_context.name }}.'), data, { timeMs: budgetMs, chars: 1_000_000 });
      await expect(rendering).rejects.toThrow(DefinitionRenderLimitError);
      await expect(rendering).rejects.toThrow(`rendering its templates takes more than ${budgetMs} ms`);
    } finally {
      restore();
    }
    // Stopped at the budget, with the template that used it up: not after the 201 templates there are.
    expect(render).toHaveBeenCalledTimes(budgetMs / costMs);
    // Each template was given only what the budget had left, far inside its own second.
    expect(render.mock.calls.map((call) => call[2]?.timeLimitMs)).toEqual(render.mock.calls.map((_, i) => budgetMs - i * costMs));
  });

  it('refuses a definition whose templates together write more than the budget', async () => {
    const graph = agents(5, `{% for i in (1..10) %}${'x'.repeat(1_000)}{% endfor %}`);
    await expect(renderDefinition(renderer, graph, data, { timeMs: 1_000, chars: 45_000 })).rejects.toThrow(
      'its templates render to more than 45000 characters together',
    );
    expect((await renderDefinition(renderer, graph, data, { timeMs: 1_000, chars: 60_000 })).nodes).toHaveLength(6);
  });

  it('refuses one template that renders past its own bound, though the definition has budget left', async () => {
    const graph = agents(1, `{% for i in (1..101) %}${'x'.repeat(10_000)}{% endfor %}`);
    const rendering = renderDefinition(renderer, graph, data, { timeMs: 1_000, chars: 2_000_000 });
    await expect(rendering).rejects.toThrow(DefinitionRenderLimitError);
    await expect(rendering).rejects.toThrow('a template renders to more than 1000000 characters');
  });

  it("hands a template's own failure to onFieldError, and still counts the templates after it against the budget", async () => {
    // A template that fails for want of a call's data (as a stub: Liquid's own failures need data to show).
    const failing = { render: (source: string, ...rest: Parameters<PromptRenderer['render']> extends [unknown, ...infer R] ? R : never) =>
      source === 'needs data' ? Promise.reject(new Error('needs data')) : renderer.render(source, ...rest) } as unknown as PromptRenderer;
    const graph: DefinitionGraph = {
      nodes: [
        { id: 'start', type: 'startCall', data: { prompt: 'needs data' } } as DefinitionNode,
        { id: 'big', type: 'agentNode', data: { prompt: `{% for i in (1..101) %}${'x'.repeat(10_000)}{% endfor %}` } } as DefinitionNode,
      ],
      edges: [],
    };
    await expect(renderDefinition(failing, graph, data)).rejects.toThrow('needs data');
    const failures: unknown[] = [];
    await expect(renderDefinition(failing, graph, data, undefined, (error) => failures.push(error))).rejects.toThrow(DefinitionRenderLimitError);
    expect(failures).toEqual([new Error('needs data')]);
    const small: DefinitionGraph = { ...graph, nodes: [graph.nodes[0], { ...graph.nodes[1], data: { prompt: 'fine' } } as DefinitionNode] };
    const rendered = await renderDefinition(failing, small, data, undefined, () => undefined);
    expect(rendered.nodes.map((node) => node.prompt)).toEqual([null, 'fine']);
  });

  it('gives the event loop back between templates of a slow definition', async () => {
    // Eleven templates of 10 ms each on the test's clock: past the 20 ms a stretch of rendering may last.
    const { timed, calls, restore } = onTestClock(10);
    // Other work, waiting for the event loop's next turn when the rendering starts.
    setImmediate(() => calls.push('other work'));
    try {
      await renderDefinition(timed, agents(10, 'Help {{ initial_context.name }}.'), data, { timeMs: 60_000, chars: 1_000_000 });
    } finally {
      restore();
    }
    // The other work ran between two templates: rendered in one stretch, it would have waited for all eleven.
    expect(calls.filter((call) => call === 'render')).toHaveLength(11);
    expect(calls.indexOf('other work')).toBeGreaterThan(0);
    expect(calls.indexOf('other work')).toBeLessThan(calls.lastIndexOf('render'));
  });

  it('gives the event loop back inside one slow template too, and counts only its rendering against the budget', async () => {
    // Each reading of `performance.now()` moves it on by a microsecond: the loop renders for 200 ms or so on this clock.
    let now = 0;
    const clock = jest.spyOn(performance, 'now').mockImplementation(() => (now += 0.001));
    // A busy process: other work takes 5 s on the clock each time it gets the event loop.
    let rendering = true;
    let otherWork = 0;
    const busy = () => {
      otherWork += 1;
      now += 5_000;
      if (rendering) setImmediate(busy);
    };
    setImmediate(busy);
    let during: number;
    try {
      const graph = agents(1, '{% for i in (1..100000) %}{% endfor %}Help {{ initial_context.name }}.');
      const rendered = await renderDefinition(renderer, graph, data, DEFINITION_RENDER_LIMITS);
      during = otherWork;
      expect(rendered.nodes.map((node) => node.prompt)).toEqual(['Hi Ada', 'Help Ada.']);
    } finally {
      rendering = false;
      clock.mockRestore();
    }
    // Rendered in one stretch, the loop would have kept the other work waiting to its end.
    expect(during).toBeGreaterThan(2);
  });
});
