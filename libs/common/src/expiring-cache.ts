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

  /**
   * `admitOnceLoaded`: a key takes a place (and may push the oldest out)
   * only once its load has succeeded and `keep` took it, not while it loads;
   * concurrent misses of a key then each load (see `FoundOrMissingCache`,
   * which shares them).
   */
  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
    private readonly admitOnceLoaded = false,
  ) {}

  /**
   * `keep`: whether a loaded value stays cached; one it refuses answers its
   * waiters and is dropped, as a failure is. `expiryOfLoad`: asked once
   * `load` is called, when what it answers expires at the latest, for a load
   * that may have been under way before this call (one shared with earlier
   * callers): its answer was read no earlier than that load began.
   */
  get(key: K, load: () => Promise<V>, keep: (value: V) => boolean = () => true, expiryOfLoad?: (key: K) => number | undefined): Promise<V> {
    if (this.ttlMs <= 0) return load();
    // A monotonic clock: the wall clock stepped back (NTP, a VM resumed) would keep entries past their time to live.
    const now = performance.now();
    const cached = this.entries.get(key);
    if (cached && cached.expiresAt > now) return cached.value;
    if (cached) this.entries.delete(key);

    const generation = this.generation;
    const value = load();
    if (this.admitOnceLoaded) {
      // Its time to live counts from before the load, as for an entry placed at once: from before the first caller's
      // when the load is shared. Counted from this call, a caller that joined a slow load just before the first one's
      // time ran out would keep its answer almost twice the time to live.
      const expiresAt = Math.min(now + this.ttlMs, expiryOfLoad?.(key) ?? Infinity);
      void value.then(
        (loaded) => this.admit(key, { value, expiresAt, loaded: { value: loaded } }, generation, keep),
        () => undefined,
      );
      return value;
    }
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

  /** When the entry of `key`, loaded or loading, expires; undefined when there is none. */
  expiryOf(key: K): number | undefined {
    return this.entries.get(key)?.expiresAt;
  }

  private admit(key: K, entry: Entry<V>, generation: number, keep: (value: V) => boolean): void {
    if (generation !== this.generation || !keep(entry.loaded!.value) || entry.expiresAt <= performance.now()) return;
    // A newer load of the key was admitted meanwhile: it stays.
    if (this.entries.has(key)) return;
    if (this.entries.size >= this.maxEntries) this.evictOldest();
    this.entries.set(key, entry);
  }

  private evictOldest(): void {
    const oldest = this.entries.keys().next();
    if (!oldest.done) this.entries.delete(oldest.value);
  }
}

/**
 * Look-ups by a key the caller chooses (an API key, a trigger UUID), where
 * most of a flood of made-up keys finds nothing: what was found and what
 * was not are kept apart, each bounded, and a key takes a place among the
 * found only once it was found. A stream of misses, however many load at
 * once, pushes out other misses only, never the entries real clients use.
 * Concurrent misses of a key share one load.
 */
export class FoundOrMissingCache<K, V> {
  private readonly found: ExpiringCache<K, V>;
  private readonly missing: ExpiringCache<K, V>;
  /** Made once: `get` runs on every trigger and key check. */
  private readonly expiryAmongMissing: (key: K) => number | undefined;

  constructor(
    ttlMs: number,
    private readonly isFound: (value: V) => boolean,
    limits: { found?: number; missing?: number } = {},
  ) {
    this.found = new ExpiringCache(ttlMs, limits.found ?? 10_000, true);
    this.expiryAmongMissing = (key) => this.missing.expiryOf(key);
    this.missing = new ExpiringCache(ttlMs, limits.missing ?? 1_000);
  }

  get(key: K, load: () => Promise<V>): Promise<V> {
    const isMissing = (value: V) => !this.isFound(value);
    // The loads under way sit among the missing, so concurrent misses share one; a found value moves to the found,
    // to expire when the shared load's entry among the missing would have.
    return this.found.get(key, () => this.missing.get(key, load, isMissing), this.isFound, this.expiryAmongMissing);
  }

  /** Drops the entries `matches` picks from both, and every load under way. */
  forget(matches: (key: K, value: V) => boolean): void {
    this.found.forget(matches);
    this.missing.forget(matches);
  }

  get size(): { found: number; missing: number } {
    return { found: this.found.size, missing: this.missing.size };
  }
}
