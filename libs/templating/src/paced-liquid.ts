import {
  AssertionError,
  CaseTag,
  Context,
  defaultOperators,
  Emitter,
  FilterImplOptions,
  ForTag,
  Liquid,
  LiquidOptions,
  Operators,
  TablerowTag,
  Template,
} from 'liquidjs';
import { RenderContext } from './render-context';

/**
 * The most items a filter, an operator (`==`, `contains`) or a `case` may
 * be given in one list. Each goes over its items in one go, pausing only
 * where it reads an item's property: `where_exp: "i", "true"`, `has_exp`,
 * `sort_natural` or `contains` over `(1..3000000)` held the event loop for
 * up to ten seconds; over this many, for 60 ms at most. A call's data holds
 * no list this long (initial_context is at most 64 KiB); `for` and
 * `tablerow`, which pause between turns, take longer ones.
 */
export const LIST_ITEMS_LIMIT = 50_000;

type FilterHandler = Extract<FilterImplOptions, (...args: never[]) => unknown>;
type OperatorHandler = Operators[string];

/**
 * A Liquid whose renders on a RenderContext give the event loop back when a
 * turn is due, wherever they repeat: between the turns of `for` and
 * `tablerow` (Liquid's loop tags; `include`/`render` with `for`, and
 * `liquid`, are refused) and the branches of `case`, before each filter and
 * operator, and at each variable read (RenderContext). A loop with nothing
 * in it reads no variable: `{% for i in (1..500000) %}{% endfor %}` held the
 * event loop for 150 ms.
 */
export function pacedLiquid(options: LiquidOptions): Liquid {
  const operators = Object.fromEntries(Object.entries(defaultOperators).map(([name, operator]) => [name, pacedOperator(operator)]));
  const liquid = new Liquid({ ...options, operators });
  liquid.registerTag('for', PacedForTag);
  liquid.registerTag('tablerow', PacedTablerowTag);
  liquid.registerTag('case', PacedCaseTag);
  for (const [name, filter] of Object.entries(liquid.filters)) liquid.registerFilter(name, pacedFilter(name, filter));
  return liquid;
}

class PacedForTag extends ForTag {
  override *render(context: Context, emitter: Emitter): Generator<unknown, void | string, Template[]> {
    return yield* pacedSteps(super.render(context, emitter), context);
  }
}

class PacedTablerowTag extends TablerowTag {
  override *render(context: Context, emitter: Emitter): Generator<unknown, void, unknown> {
    return yield* pacedSteps(super.render(context, emitter), context);
  }
}

/** `{% case %}` compares its value with each `when` in one go, item by item for lists. */
class PacedCaseTag extends CaseTag {
  override *render(context: Context, emitter: Emitter): Generator<unknown, void, unknown> {
    return yield* pacedSteps(super.render(context, emitter), context, (value) => refuseLongList(value, '{% case %}'));
  }
}

/**
 * A tag's render as Liquid runs it, a step (a loop's turn, a branch) at a
 * time, with a turn of the event loop between two when one is due; `inspect`
 * sees what each step answers.
 */
function* pacedSteps<TReturn, TNext>(
  steps: Generator<unknown, TReturn, TNext>,
  context: Context,
  inspect?: (value: TNext) => void,
): Generator<unknown, TReturn, TNext> {
  let step = steps.next();
  while (!step.done) {
    let answer: TNext;
    try {
      answer = yield step.value;
    } catch (error) {
      step = steps.throw(error);
      continue;
    }
    inspect?.(answer);
    const pause = RenderContext.pauseIfDue(context);
    if (pause) yield pause;
    step = steps.next(answer);
  }
  return step.value;
}

function pacedFilter(name: string, filter: FilterImplOptions): FilterImplOptions {
  const handler: FilterHandler = typeof filter === 'function' ? filter : filter.handler;
  const paced = function (this: ThisParameterType<FilterHandler>, ...args: Parameters<FilterHandler>): unknown {
    refuseLongList(args[0], `the ${name} filter`);
    return RenderContext.paced(this.context, () => handler.apply(this, args));
  };
  return typeof filter === 'function' ? paced : { ...filter, handler: paced };
}

/** Liquid calls an operator with its operands, then the context. */
function pacedOperator(operator: OperatorHandler): OperatorHandler {
  return ((...args: unknown[]) => {
    const context = args[args.length - 1] as Context;
    for (const operand of args.slice(0, -1)) refuseLongList(operand, 'an operator');
    return RenderContext.paced(context, () => (operator as (...args: unknown[]) => unknown)(...args));
  }) as OperatorHandler;
}

function refuseLongList(value: unknown, what: string): void {
  if (Array.isArray(value) && value.length > LIST_ITEMS_LIMIT) {
    throw new AssertionError(`memory alloc limit exceeded: ${what} is given ${value.length} items, more than ${LIST_ITEMS_LIMIT}`);
  }
}
