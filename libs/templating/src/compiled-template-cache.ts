/** How many compiled templates a cache keeps, and what they may weigh together. */
export interface CompiledTemplateCacheLimits {
  entries: number;
  weight: number;
}

/**
 * Compiled templates by their source, the least recently used forgotten
 * first once there are more than `limits.entries` of them or they weigh more
 * than `limits.weight` together (as `weigh` has it): a count alone lets a few
 * thousand large templates, each saved once, hold hundreds of megabytes,
 * while the small ones in use every call stay cheap to keep.
 */
export class CompiledTemplateCache<V> {
  private readonly entries = new Map<string, { value: V; weight: number }>();
  private totalWeight = 0;

  constructor(
    private readonly limits: CompiledTemplateCacheLimits,
    private readonly weigh: (source: string) => number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** What the templates kept weigh together. */
  get weight(): number {
    return this.totalWeight;
  }

  /** The template compiled from `source`, now the most recently used; undefined when it is not kept. */
  get(source: string): V | undefined {
    const entry = this.entries.get(source);
    if (!entry) return undefined;
    // Map iteration follows insertion order: stored again, it is the last to go.
    this.entries.delete(source);
    this.entries.set(source, entry);
    return entry.value;
  }

  /** Keeps `value` as the most recently used, forgetting the oldest past the limits; one heavier than them all is not kept. */
  set(source: string, value: V): void {
    this.delete(source);
    const weight = this.weigh(source);
    if (weight > this.limits.weight) return;
    this.entries.set(source, { value, weight });
    this.totalWeight += weight;
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.limits.entries && this.totalWeight <= this.limits.weight) break;
      this.delete(oldest);
    }
  }

  private delete(source: string): void {
    const entry = this.entries.get(source);
    if (!entry) return;
    this.entries.delete(source);
    this.totalWeight -= entry.weight;
  }
}
