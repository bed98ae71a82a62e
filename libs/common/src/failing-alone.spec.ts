import { failingAlone } from './failing-alone';

describe('failingAlone', () => {
  /** Doubles numbers in one call; a group holding a negative number is refused whole, as a statement would be. */
  const calls: number[][] = [];
  const refused = (message: string, code: string) => Object.assign(new Error(message), { code });
  const flush = failingAlone(async (items: number[]) => {
    calls.push(items);
    if (items.some((item) => item < 0)) throw refused(`refused ${items.join(',')}`, '22P05');
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
    expect(results[1]).toMatchObject({ message: 'refused -2', code: '22P05' });
    expect(results[2]).toBe(6);
    expect(calls).toEqual([[1, -2, 3], [1], [-2], [3]]);
  });

  it.each([
    [undefined, 4],
    [1, 1],
  ])('sends at most %s (so %s) items at once when it sends them one by one', async (atOnce, expected) => {
    let inFlight = 0;
    let most = 0;
    const slow = failingAlone(async (items: number[]) => {
      if (items.length > 1) throw refused('refused', '23503');
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 5));
      inFlight--;
      return items;
    }, atOnce);
    expect(await slow(Array.from({ length: 20 }, (_, index) => index))).toEqual(Array.from({ length: 20 }, (_, index) => index));
    expect(most).toBe(expected);
  });

  it('fails a group at once when the statement timed out or the server is overloaded, not only unreachable', async () => {
    for (const code of ['57014', '53200']) {
      const overloaded = failingAlone(async (items: number[]) => {
        calls.push(items);
        throw refused('busy', code);
      });
      await expect(overloaded([1, 2])).rejects.toMatchObject({ code });
    }
    expect(calls).toEqual([[1, 2], [1, 2]]);
  });

  it('fails a group at once when the database cannot be reached', async () => {
    const unreachable = failingAlone(async (items: number[]) => {
      calls.push(items);
      throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    });
    await expect(unreachable([1, 2])).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(calls).toEqual([[1, 2]]);
  });

  it('fails the items not sent yet with the first item that fails for anything but its row, instead of sending each', async () => {
    const goneAway = failingAlone(async (items: number[]) => {
      calls.push(items);
      if (items.length > 1) throw refused('deadlock detected', '40P01');
      if (items[0] === 2) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      return items;
    }, 1);
    const results = await goneAway([1, 2, 3, 4, 5]);
    expect(results[0]).toBe(1);
    for (const failed of results.slice(1)) expect(failed).toMatchObject({ code: 'ECONNREFUSED' });
    // The group, then items 1 and 2 alone: 3, 4 and 5 are not sent.
    expect(calls).toEqual([[1, 2, 3, 4, 5], [1], [2]]);
  });

  it('lets a lone item fail as it failed', async () => {
    await expect(flush([-1])).rejects.toThrow('refused -1');
    expect(calls).toEqual([[-1]]);
  });
});
