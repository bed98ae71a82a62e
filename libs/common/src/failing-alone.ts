import { isDatabaseUnavailable } from './database-unavailable';

/**
 * Wraps a grouped write (a `Batcher` flush) so that a group the database
 * refuses is sent again one item at a time: an item it cannot store (a NUL
 * in a carrier's text, a row deleted meanwhile, a deadlock) then fails
 * alone, not every item that shared its statement. A database that cannot
 * be reached fails the group at once: each item sent again would only be one
 * more failed round trip.
 */
export function failingAlone<I, O>(flush: (items: I[]) => Promise<Array<O | Error>>): (items: I[]) => Promise<Array<O | Error>> {
  return async (items) => {
    try {
      return await flush(items);
    } catch (error) {
      if (items.length === 1 || isDatabaseUnavailable(error)) throw error;
      return Promise.all(
        items.map((item) =>
          flush([item]).then(
            ([result]) => result,
            (failure: unknown) => (failure instanceof Error ? failure : new Error(String(failure))),
          ),
        ),
      );
    }
  };
}
