import { PromptRenderer } from './prompt-renderer';

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

  it('rejects an unknown filter instead of ignoring it', () => {
    expect(() => renderer.validate('{{ initial_context.a | exec }}')).toThrow();
  });
});
