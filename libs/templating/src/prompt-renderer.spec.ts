import { LIST_ITEMS_LIMIT } from './paced-liquid';
import { PromptRenderer, RENDERED_CHARS_LIMIT, TEMPLATE_TAGS_LIMIT } from './prompt-renderer';
import { RENDER_STRETCH_LIMIT } from './render-context';

/**
 * Liquid and the renderer read the time from `performance.now()`: here each
 * reading moves it on by `tickMs`, so that how long a render takes is counted
 * in its steps, not in how fast or busy the machine is. `advance` moves it as
 * other work holding the event loop would.
 */
function tickingClock(tickMs: number) {
  let now = 0;
  const spy = jest.spyOn(performance, 'now').mockImplementation(() => (now += tickMs));
  return {
    advance: (ms: number) => {
      now += ms;
    },
    restore: () => spy.mockRestore(),
  };
}

describe('PromptRenderer', () => {
  const renderer = new PromptRenderer();

  it('renders nested initial_context values by dotted path', async () => {
    const result = await renderer.render('Hi {{ initial_context.user.name }}!', {
      initial_context: { user: { name: 'Ada' } },
    });
    expect(result).toEqual({ text: 'Hi Ada!', missingPaths: [] });
  });

  it('renders a missing value empty and lists its path', async () => {
    const result = await renderer.render('Hi {{ initial_context.user.name }}.', { initial_context: {} });
    expect(result.text).toBe('Hi .');
    expect(result.missingPaths).toEqual(['initial_context.user.name']);
  });

  it('uses the default filter as a fallback for a missing value', async () => {
    const result = await renderer.render('Hi {{ initial_context.name | default: "there" }}', { initial_context: {} });
    expect(result.text).toBe('Hi there');
    expect(result.missingPaths).toEqual(['initial_context.name']);
  });

  it('does not reach inherited properties such as constructor', async () => {
    const result = await renderer.render('{{ initial_context.constructor }}', { initial_context: {} });
    expect(result.text).toBe('');
  });

  it('refuses to read files through include', async () => {
    await expect(renderer.render('{% include "/etc/passwd" %}', {})).rejects.toThrow();
  });

  it.each(['{% include "x" %}', '{% render "constructor" %}', '{% include "constructor" %}', '{% layout "toString" %}Hi'])(
    'refuses %s when the template is saved, and when it is rendered',
    async (source) => {
      expect(() => renderer.validate(source)).toThrow(/is not available: a prompt has no other templates to read/);
      await expect(renderer.render(source, {})).rejects.toThrow(/is not available/);
    },
  );

  it('keeps capture working within the bound', async () => {
    const result = await renderer.render('{% capture hello %}Hi {{ initial_context.name }}{% endcapture %}{{ hello }}!', {
      initial_context: { name: 'Ada' },
    });
    expect(result).toEqual({ text: 'Hi Ada!', missingPaths: [] });
  });

  it('refuses a template that renders past the bound, however it grows: a capture doubled, a loop, the context repeated', async () => {
    const doubling = `{% capture a %}xxxxxxxx{% endcapture %}${'{% capture a %}{{a}}{{a}}{% endcapture %}'.repeat(25)}{{ a }}`;
    await expect(renderer.render(doubling, {})).rejects.toThrow(`renders to more than ${RENDERED_CHARS_LIMIT} characters`);
    const loop = '{% for i in (1..2000) %}{{ initial_context.text }}{% endfor %}';
    await expect(renderer.render(loop, { initial_context: { text: 'y'.repeat(60_000) } })).rejects.toThrow(/renders to more than/);
    // Just under the bound renders.
    const under = await renderer.render('{% for i in (1..10) %}{{ initial_context.text }}{% endfor %}', { initial_context: { text: 'z'.repeat(100_000) } });
    expect(under.text).toHaveLength(1_000_000);
  });

  it('refuses {% liquid %}, which holds any number of tags behind one delimiter, when saved and when rendered', async () => {
    const many = `{% liquid\n${'echo "a"\n'.repeat(2_000)}%}`;
    expect(() => renderer.validate(many)).toThrow('{% liquid %} is not available');
    await expect(renderer.render('{%- liquid echo "a" -%}', {})).rejects.toThrow('{% liquid %} is not available');
    // Its `echo` alone is an ordinary tag.
    expect((await renderer.render('{% echo "a" %}', {})).text).toBe('a');
  });

  it(`refuses to save a template of more than ${TEMPLATE_TAGS_LIMIT} tags and outputs, before parsing it`, () => {
    expect(() => renderer.validate('{{ a }}'.repeat(TEMPLATE_TAGS_LIMIT))).not.toThrow();
    expect(() => renderer.validate(`${'{{ a }}'.repeat(TEMPLATE_TAGS_LIMIT)}{% if a %}{% endif %}`)).toThrow(
      `it holds ${TEMPLATE_TAGS_LIMIT + 2} Liquid tags and outputs; the limit is ${TEMPLATE_TAGS_LIMIT}`,
    );
  });

  it('rejects an unknown filter instead of ignoring it', () => {
    expect(() => renderer.validate('{{ initial_context.a | exec }}')).toThrow();
  });

  describe('what Liquid parses only as it renders, parsed when the template is saved', () => {
    it.each([
      ['an *_exp expression with an unknown filter', `{{ initial_context.items | where_exp: "i", "i.kind | downcse" | size }}`, /where_exp .*undefined filter: downcse/],
      ['one in a branch no data of the save takes', `{% if initial_context.vip %}{{ initial_context.items | find_exp: "i", "i.a | nope" }}{% endif %}`, /find_exp .*undefined filter: nope/],
      ['one inside a loop', `{% for x in initial_context.xs %}{% assign n = x.items | reject_exp: "i", "i | nope" %}{% endfor %}`, /reject_exp .*undefined filter: nope/],
      ['one that does not parse at all', `{{ initial_context.items | group_by_exp: "i", "i.kind[" }}`, /group_by_exp .*not closed/],
      ['one inside another expression', `{{ initial_context.a | where_exp: "i", "i.b | where_exp: 'j', 'j | nope'" }}`, /undefined filter: nope/],
      ['a {% cycle %} value with an unknown filter', `{% for x in initial_context.xs %}{% cycle "a" | nosuch, "b" %}{% endfor %}`, /undefined filter: nosuch/],
    ])('refuses %s', (_case, source, message) => {
      expect(() => renderer.validate(source)).toThrow(message);
    });

    it('takes sound ones, and an expression held in a variable, known only with the call', async () => {
      const sound = `{{ initial_context.items | where_exp: "i", "i.kind == 'x'" | map: "name" | join: "," }}{% for x in initial_context.items %}{% cycle "a" | upcase, "b" %}{% endfor %}`;
      expect(() => renderer.validate(sound)).not.toThrow();
      expect(() => renderer.validate('{{ initial_context.items | where_exp: "i", initial_context.rule }}')).not.toThrow();
      const items = [
        { kind: 'x', name: 'one' },
        { kind: 'y', name: 'two' },
        { kind: 'x', name: 'three' },
      ];
      expect((await renderer.render(sound, { initial_context: { items } })).text).toBe('one,threeAbA');
    });
  });

  it('keeps a small template in use compiled while large ones, each rendered once, pass through, and forgets the oldest of those', async () => {
    const fresh = new PromptRenderer();
    const parse = jest.spyOn(fresh['liquid'], 'parse');
    const parsed = (source: string) => parse.mock.calls.filter(([parsedSource]) => parsedSource === source).length;
    const hot = 'Hi {{ initial_context.name }}';
    // 250 sources of 99,000 characters: far fewer than the 2,000 templates kept, and 24.75 million characters together.
    const large = (i: number) => `${i}:${'x'.repeat(99_000)}`;
    for (let i = 0; i < 250; i++) {
      await fresh.render(large(i), {});
      expect((await fresh.render(hot, { initial_context: { name: 'Ada' } })).text).toBe('Hi Ada');
    }
    expect(parsed(hot)).toBe(1);
    expect(fresh['compiled'].weight).toBeLessThanOrEqual(20_000_000);
    // The first large one was forgotten: compiled again when it comes back.
    await fresh.render(large(0), {});
    expect(parsed(large(0))).toBe(2);
    await fresh.render(large(249), {});
    expect(parsed(large(249))).toBe(1);
  });

  it.each([
    ['the size of a list', '{{ initial_context.items.size }}', '3'],
    ['the first and last items of a list', '{{ initial_context.items.first }}{{ initial_context.items.last }}', 'ac'],
    ['an item counted from the end of a list', '{{ initial_context.items[-1] }}{{ initial_context.items[-3] }}', 'ca'],
    ['the size and length of a text', '{{ initial_context.name.size }}{{ initial_context.name.length }}', '33'],
    ['the size of an object (its keys)', '{{ initial_context.user.size }}', '1'],
    ['a property of an item counted from the end', '{{ initial_context.people[-1].name }}', 'Bo'],
  ])('does not list %s as missing: Liquid reads it', async (_case, source, text) => {
    const data = { initial_context: { items: ['a', 'b', 'c'], name: 'Ada', user: { id: 1 }, people: [{ name: 'Al' }, { name: 'Bo' }] } };
    expect(await renderer.render(source, data)).toEqual({ text, missingPaths: [] });
  });

  it.each([
    ['the first item of an empty list', '{{ initial_context.none.first }}', 'initial_context.none.first'],
    ['an item counted from the end past the start', '{{ initial_context.items[-4] }}', 'initial_context.items.-4'],
    ['the size of a number', '{{ initial_context.count.size }}', 'initial_context.count.size'],
    ['the first item of a text (no list)', '{{ initial_context.name.first }}', 'initial_context.name.first'],
    ['a property of a text', '{{ initial_context.name.last_name }}', 'initial_context.name.last_name'],
  ])('still lists %s as missing: it renders empty', async (_case, source, path) => {
    const data = { initial_context: { items: ['a', 'b', 'c'], none: [], count: 4, name: 'Ada' } };
    expect(await renderer.render(source, data)).toEqual({ text: '', missingPaths: [path] });
  });
});

describe('PromptRenderer: one template does not hold the event loop', () => {
  const renderer = new PromptRenderer();
  const data = { initial_context: { items: Array.from({ length: 20_000 }, (_, i) => ({ name: `n${i}` })) } };

  it.each([
    ['a loop with nothing in it', '{% for i in (1..100000) %}{% endfor %}Hi', 'Hi'],
    ['a loop that only continues', '{% for i in (1..100000) %}{% continue %}{% endfor %}Hi', 'Hi'],
    ['loops in a loop', '{% for i in (1..300) %}{% for j in (1..300) %}{% endfor %}{% endfor %}Hi', 'Hi'],
    ['a table', '{% tablerow i in (1..20000) cols: 20000 %}{% endtablerow %}', expect.stringMatching(/^<tr class="row1"><td class="col1"><\/td>/)],
    ['a filter going over a list', '{{ initial_context.items | where_exp: "item", "item.name != blank" | size }}', '20000'],
  ])('gives the event loop back in %s', async (_case, source, text) => {
    // 200 ms of rendering or so on the test's clock: past the 20 ms a stretch of rendering may last.
    const clock = tickingClock(0.001);
    const events: string[] = [];
    try {
      // Other work, waiting for the event loop's next turn when the render starts.
      setImmediate(() => events.push('other work'));
      const result = await renderer.render(source, data);
      events.push('rendered');
      expect(result.text).toEqual(text);
    } finally {
      clock.restore();
    }
    // Rendered in one stretch, the template would have kept the other work waiting to its end.
    expect(events).toEqual(['other work', 'rendered']);
  });

  it('counts against its time only its own rendering, not what other work takes while it gives the event loop back', async () => {
    const clock = tickingClock(0.001);
    let rendering = true;
    // A busy process: other work takes 5 s on the clock each time it gets the event loop.
    const busy = () => {
      clock.advance(5_000);
      if (rendering) setImmediate(busy);
    };
    setImmediate(busy);
    try {
      const loop = '{% for i in (1..100000) %}{% endfor %}Hi';
      expect((await renderer.render(loop, data, { timeLimitMs: 500 })).text).toBe('Hi');
      // Its own rendering past the limit still fails it.
      await expect(renderer.render(loop, data, { timeLimitMs: 50 })).rejects.toThrow('template render limit exceeded');
    } finally {
      rendering = false;
      clock.restore();
    }
  });

  it('stops at its time inside a filter going over a list, not after it', async () => {
    const clock = tickingClock(0.001);
    try {
      const filter = '{{ initial_context.items | where_exp: "item", "item.name != blank" | size }}';
      await expect(renderer.render(filter, data, { timeLimitMs: 10 })).rejects.toThrow('template render limit exceeded');
    } finally {
      clock.restore();
    }
  });

  it(`refuses a filter, an operator or a case given more than ${LIST_ITEMS_LIMIT} items, which each goes over in one go`, async () => {
    // The clock stands still: these are limits on items, and a loaded machine must not reach the time limit first.
    const clock = tickingClock(0);
    try {
      await refusesListsOverTheLimit();
    } finally {
      clock.restore();
    }
  });

  async function refusesListsOverTheLimit() {
    const over = LIST_ITEMS_LIMIT + 1;
    await expect(renderer.render(`{{ (1..${over}) | where_exp: "i", "true" | size }}`, {})).rejects.toThrow(
      `the where_exp filter is given ${over} items, more than ${LIST_ITEMS_LIMIT}`,
    );
    await expect(renderer.render(`{% assign a = (1..${over}) %}{% if a contains 0 %}{% endif %}`, {})).rejects.toThrow(`an operator is given ${over} items`);
    await expect(renderer.render(`{% assign a = (1..${over}) %}{% case a %}{% when 1 %}{% endcase %}`, {})).rejects.toThrow(`{% case %} is given ${over} items`);
    // Just under, or a loop, which goes over a list a turn at a time.
    expect((await renderer.render(`{{ (1..${LIST_ITEMS_LIMIT}) | where_exp: "i", "true" | size }}`, {})).text).toBe(`${LIST_ITEMS_LIMIT}`);
    expect((await renderer.render(`{% for i in (1..${over}) %}{% endfor %}ok`, {})).text).toBe('ok');
  }

  it(`refuses to make more than ${RENDER_STRETCH_LIMIT} items or characters where it cannot give the event loop back`, async () => {
    // A limit on items too: on a clock that stands still, so that a loaded machine does not reach the time limit first.
    const clock = tickingClock(0);
    try {
      // Ranges made in one go, by tags that read no variable.
      await expect(renderer.render('{% assign a = (1..600000) %}{% assign b = (1..600000) %}', {})).rejects.toThrow(
        `more than ${RENDER_STRETCH_LIMIT} items or characters handled in one go`,
      );
      // A variable read between them is a point where it can.
      expect((await renderer.render('{% assign a = (1..600000) %}{{ a.size }}{% assign b = (1..600000) %}{{ b.size }}', {})).text).toBe('600000600000');
    } finally {
      clock.restore();
    }
  });
});
