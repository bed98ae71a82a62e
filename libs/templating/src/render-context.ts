import { AssertionError, Context, Liquid, RenderOptions } from 'liquidjs';
import { RenderClock } from './render-clock';

/**
 * The most items or characters a render may handle (ranges made, values
 * filters are given or make, as Liquid's memory limit counts them) between
 * two points where it can give the event loop back. Liquid makes a range in
 * one go, and runs the tags that read no variable one after the other:
 * `{% assign a = (1..9999999) %}` held the event loop for 280 ms, and a
 * `where_exp` making a range for each item longer. As many as a template
 * may write (RENDERED_CHARS_LIMIT): no value of a call's data comes near it
 * (initial_context is at most 64 KiB).
 */
export const RENDER_STRETCH_LIMIT = 1_000_000;
/** What the ranges and filters of one render may handle together (Liquid's `memoryLimit`, as it counts it). */
export const RENDER_MEMORY_LIMIT = 10_000_000;
/** How Liquid's memory limit, and the bounds on items above, word their failures. */
const MEMORY_LIMIT_MESSAGE = 'memory alloc limit exceeded';

/**
 * The message of the memory bound a render failed on (RENDER_STRETCH_LIMIT,
 * RENDER_MEMORY_LIMIT, a list of more than LIST_ITEMS_LIMIT items), under the
 * RenderError Liquid wraps a tag's failure in; null for any other failure.
 */
export function memoryLimitFailure(error: unknown): string | null {
  let found: string | null = null;
  for (const cause of renderFailureCauses(error)) if (cause.message.startsWith(MEMORY_LIMIT_MESSAGE)) found = cause.message;
  return found;
}

/** A render's failure, then the one each RenderError Liquid wraps a tag's failure in holds, down to the first. */
export function* renderFailureCauses(error: unknown): Generator<Error> {
  for (let cause = error; cause instanceof Error; cause = (cause as { originalError?: unknown }).originalError) yield cause;
}

/** What a range or filter counts for whatever its size: a `where_exp` making `(1..19)` for each of 50,000 items took 120 ms. */
const STEP_COST = 100;

/** Liquid's type for its limits, which it only asks to `use` and `check`. */
type Limiter = Context['renderLimit'];
type PropertyPath = Parameters<Context['_getFromScope']>[1];

/**
 * A render's Liquid context, on a RenderClock. Liquid gives the event loop
 * back only where a template waits for a promise, which a prompt's never
 * does: this context pauses for a turn at each variable read when the clock
 * has one due (so do loop tags, filters and operators: see pacedLiquid), and
 * holds the render to its time on that clock, the turns given back left out.
 */
export class RenderContext extends Context {
  constructor(
    data: object,
    liquid: Liquid,
    private readonly budget: RenderBudget,
    options: RenderOptions = {},
  ) {
    super(data, liquid.options, { ...options, sync: false }, { liquid, renderLimit: budget.time, memoryLimit: budget.memory });
  }

  /** A context for one render of at most `timeLimitMs` on `clock`. */
  static on(clock: RenderClock, timeLimitMs: number, data: object, liquid: Liquid): RenderContext {
    return new RenderContext(data, liquid, new RenderBudget(clock, timeLimitMs));
  }

  /** For a render on a RenderContext, a turn of the event loop to wait for when one is due; throws past the render's time. */
  static pauseIfDue(context: Context): Promise<void> | undefined {
    return context instanceof RenderContext ? context.budget.pauseIfDue() : undefined;
  }

  /**
   * What `step` answers (a value, or steps Liquid runs) at once, or, when a
   * turn of the event loop is due, steps that wait for it first: no extra
   * step otherwise, where a render takes a few for each item it goes over.
   */
  static paced(context: Context, step: () => unknown): unknown {
    const pause = RenderContext.pauseIfDue(context);
    return pause ? afterPause(pause, step) : step();
  }

  // Every variable read, the reads of each item by `where_exp`, `map`, `sort`... included: the loops inside a filter.
  override _getFromScope(scope: unknown, paths: PropertyPath, strictVariables?: boolean): IterableIterator<unknown> {
    return RenderContext.paced(this, () => super._getFromScope(scope, paths, strictVariables)) as IterableIterator<unknown>;
  }

  /** Liquid's `where`, `group_by`, `find`... read each item in a context of its own: one on the same budget. */
  override spawn(scope: object = {}): Context {
    const options = { globals: this.globals, strictVariables: this.strictVariables, ownPropertyOnly: this.ownPropertyOnly };
    return new RenderContext(scope, this.liquid as Liquid, this.budget, options);
  }
}

function* afterPause(pause: Promise<void>, step: () => unknown): Generator<unknown, unknown> {
  yield pause;
  return yield step();
}

/** What one render may spend, shared by the contexts Liquid spawns for it. */
class RenderBudget {
  /** Liquid's render limit, which it checks with the time before each template and block: on the clock. */
  readonly time = { use: () => this.checkTime(), check: (now: number) => this.checkTime(now) } as unknown as Limiter;
  /** Liquid's memory limit, which each range and filter is charged what it handles. */
  readonly memory = { use: (count: number) => this.charge(+count), check: (count: number) => this.charge(+count, false) } as unknown as Limiter;
  private readonly deadlineMs: number;
  private used = 0;
  /** What was handled since the render last could give the event loop back. */
  private stretch = 0;

  constructor(
    private readonly clock: RenderClock,
    timeLimitMs: number,
  ) {
    this.deadlineMs = clock.elapsedMs() + timeLimitMs;
  }

  pauseIfDue(): Promise<void> | undefined {
    this.stretch = 0;
    const now = performance.now();
    this.checkTime(now);
    return this.clock.pauseIfDue(now);
  }

  private checkTime(now = performance.now()): void {
    // Liquid's own words for it, which the end reason of a call has always shown.
    if (this.clock.elapsedMs(now) > this.deadlineMs) throw new AssertionError('template render limit exceeded');
  }

  private charge(count: number, use = true): void {
    if (!(count > 0)) return;
    if (this.stretch + count + STEP_COST > RENDER_STRETCH_LIMIT) {
      throw new AssertionError(`${MEMORY_LIMIT_MESSAGE}: more than ${RENDER_STRETCH_LIMIT} items or characters handled in one go`);
    }
    if (this.used + count > RENDER_MEMORY_LIMIT) throw new AssertionError(MEMORY_LIMIT_MESSAGE);
    if (!use) return;
    this.used += count;
    this.stretch += count + STEP_COST;
    // Charged before the work: a render past its time stops here, not after one more range or filter.
    this.checkTime();
  }
}
