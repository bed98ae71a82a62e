interface Entry<V> {
  value: Promise<V>;
  expiresAt: number;
  /** Set once the load has succeeded. */
  loaded?: { value: V };
}

/**
 * A bounded in-memory cache whose entries live `ttlMs` at most: the bound on
 * how stale an answer may be on any replica. Concurrent misses of one key
 * share one load; a load that fails is not kept. `forget` and `clear` also
 * discard loads already under way, so a write followed by `forget` is never
 * undone by an answer read before the write.
 */
export class ExpiringCache<K, V> {
  private readonly entries = new Map<K, Entry<V>>();
  private generation = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  /** `keep`: whether a loaded value stays cached; one it refuses answers its waiters and is dropped, as a failure is. */
  get(key: K, load: () => Promise<V>, keep: (value: V) => boolean = () => true): Promise<V> {
    if (this.ttlMs <= 0) return load();
    const now = Date.now();
    const cached = this.entries.get(key);
    if (cached && cached.expiresAt > now) return cached.value;
    if (cached) this.entries.delete(key);

    const generation = this.generation;
    const value = load();
    if (this.entries.size >= this.maxEntries) this.evictOldest();
    const entry: Entry<V> = { value, expiresAt: now + this.ttlMs };
    this.entries.set(key, entry);
    value.then(
      (loaded) => {
        entry.loaded = { value: loaded };
        if ((generation !== this.generation || !keep(loaded)) && this.entries.get(key) === entry) this.entries.delete(key);
      },
      () => {
        if (this.entries.get(key) === entry) this.entries.delete(key);
      },
    );
    return value;
  }

  /** Drops the entries `matches` picks, and every load under way. */
  forget(matches: (key: K, value: V) => boolean): void {
    this.generation += 1;
    for (const [key, entry] of this.entries) {
      if (!entry.loaded || matches(key, entry.loaded.value)) this.entries.delete(key);
    }
  }

  clear(): void {
    this.generation += 1;
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }

  private evictOldest(): void {
    const oldest = this.entries.keys().next();
    if (!oldest.done) this.entries.delete(oldest.value);
  }
}
