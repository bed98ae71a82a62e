import { PromptRenderer, RENDERED_CHARS_LIMIT, TEMPLATE_TAGS_LIMIT } from './prompt-renderer';

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
});
