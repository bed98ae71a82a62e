/** Item by item, this many at once by default: a refused group of 500 must not become 500 statements in flight. */
const ALONE_AT_ONCE = 4;

/**
 * Wraps a grouped write (a `Batcher` flush) so that a group the database
 * refuses for what one of its rows holds is sent again one item at a time:
 * an item it cannot store (a NUL in a carrier's text: SQLSTATE class 22; a
 * row deleted meanwhile: class 23) or one caught in a deadlock (class 40)
 * then fails alone, not every item that shared its statement. Any other
 * failure (the database away, overloaded, a statement timing out) fails the
 * group at once: sending each item again would only add load; so does one
 * while the items are sent again, for the items not sent yet.
 * `atOnce`: items sent again side by side, each a statement and a pooled
 * connection of its own.
 */
export function failingAlone<I, O>(
  flush: (items: I[]) => Promise<Array<O | Error>>,
  atOnce = ALONE_AT_ONCE,
): (items: I[]) => Promise<Array<O | Error>> {
  return async (items) => {
    try {
      return await flush(items);
    } catch (error) {
      if (items.length === 1 || !isRowLevelRefusal(error)) throw error;
      const results = new Array<O | Error>(items.length);
      let next = 0;
      // Once an item fails for anything but what its row holds (the database gone away meanwhile), the items not
      // sent yet fail with it, at once, rather than each waiting out its own connection or read timeout.
      let away: Error | null = null;
      const worker = async () => {
        for (let index = next++; index < items.length; index = next++) {
          if (away) {
            results[index] = away;
            continue;
          }
          results[index] = await flush([items[index]]).then(
            ([result]) => result,
            (failure: unknown) => {
              const failed = failure instanceof Error ? failure : new Error(String(failure));
              if (!isRowLevelRefusal(failure)) away ??= failed;
              return failed;
            },
          );
        }
      };
      await Promise.all(Array.from({ length: Math.min(atOnce, items.length) }, worker));
      return results;
    }
  };
}

function isRowLevelRefusal(error: unknown): boolean {
  const candidate = error as { code?: unknown; driverError?: { code?: unknown } } | null;
  const code = candidate?.code ?? candidate?.driverError?.code;
  return typeof code === 'string' && /^(22|23|40)/.test(code);
}
