import { CompiledTemplateCache } from './compiled-template-cache';

describe('CompiledTemplateCache', () => {
  const byLength = (source: string) => source.length;

  it('forgets the least recently used templates once they weigh more than the limit together, however few they are', () => {
    const cache = new CompiledTemplateCache<number>({ entries: 100, weight: 10 }, byLength);
    cache.set('aaaa', 1);
    cache.set('bbbb', 2);
    cache.set('cccc', 3);
    expect([cache.get('aaaa'), cache.get('bbbb'), cache.get('cccc')]).toEqual([undefined, 2, 3]);
    expect({ size: cache.size, weight: cache.weight }).toEqual({ size: 2, weight: 8 });
  });

  it('keeps a template used again over the ones used less recently', () => {
    const cache = new CompiledTemplateCache<number>({ entries: 100, weight: 10 }, byLength);
    cache.set('aaaa', 1);
    cache.set('bbbb', 2);
    cache.get('aaaa');
    cache.set('cccc', 3);
    expect([cache.get('aaaa'), cache.get('bbbb'), cache.get('cccc')]).toEqual([1, undefined, 3]);
  });

  it('forgets the least recently used past its count, however little they weigh', () => {
    const cache = new CompiledTemplateCache<number>({ entries: 2, weight: 1_000 }, byLength);
    cache.set('a', 1);
    cache.set('b', 2);
    cache.set('c', 3);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([undefined, 2, 3]);
    expect(cache.weight).toBe(2);
  });

  it('does not keep a template heavier than the whole limit, nor forget the others for it', () => {
    const cache = new CompiledTemplateCache<number>({ entries: 100, weight: 10 }, byLength);
    cache.set('aaaa', 1);
    cache.set('x'.repeat(11), 2);
    expect([cache.get('aaaa'), cache.get('x'.repeat(11))]).toEqual([1, undefined]);
    expect(cache.weight).toBe(4);
  });

  it('counts a template stored again once', () => {
    const cache = new CompiledTemplateCache<number>({ entries: 100, weight: 10 }, byLength);
    cache.set('aaaa', 1);
    cache.set('aaaa', 2);
    expect({ value: cache.get('aaaa'), size: cache.size, weight: cache.weight }).toEqual({ value: 2, size: 1, weight: 4 });
  });
});
