import { failingAlone } from './failing-alone';

describe('failingAlone', () => {
  /** Doubles numbers in one call; a group holding a negative number is refused whole, as a statement would be. */
  const calls: number[][] = [];
  const flush = failingAlone(async (items: number[]) => {
    calls.push(items);
    if (items.some((item) => item < 0)) throw new Error(`refused ${items.join(',')}`);
    return items.map((item) => item * 2);
  });
  beforeEach(() => calls.splice(0));

  it('sends a group once when it is accepted', async () => {
    expect(await flush([1, 2, 3])).toEqual([2, 4, 6]);
    expect(calls).toEqual([[1, 2, 3]]);
  });

  it('sends a refused group again item by item, so only the refused item fails', async () => {
    const results = await flush([1, -2, 3]);
    expect(results[0]).toBe(2);
    expect(results[1]).toEqual(new Error('refused -2'));
    expect(results[2]).toBe(6);
    expect(calls).toEqual([[1, -2, 3], [1], [-2], [3]]);
  });

  it('fails a group at once when the database cannot be reached', async () => {
    const unreachable = failingAlone(async (items: number[]) => {
      calls.push(items);
      throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    });
    await expect(unreachable([1, 2])).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(calls).toEqual([[1, 2]]);
  });

  it('lets a lone item fail as it failed', async () => {
    await expect(flush([-1])).rejects.toThrow('refused -1');
    expect(calls).toEqual([[-1]]);
  });
});
