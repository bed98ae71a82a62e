/**
 * A map of at most `limit` entries that forgets the least recently stored
 * one first (Map iteration follows insertion order, so storing a key again
 * makes it the most recent). For in-process memos whose size must stay bounded.
 */
export class RecentMap<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly limit: number) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  /** Oldest first. */
  [Symbol.iterator](): IterableIterator<[K, V]> {
    return this.entries.entries();
  }

  /** Stores `value` under `key` as the most recent entry; past the limit the oldest entry goes. */
  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.limit) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
  }
}
