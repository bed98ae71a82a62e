import { Injectable } from '@nestjs/common';
import { CaptureTag, Context, Emitter, FilteredValueToken, Liquid, QuotedToken, TagToken, Template, TokenKind, toPromise, toValue, toValueSync, Value } from 'liquidjs';
import { CompiledTemplateCache } from './compiled-template-cache';
import { missingPaths, VariablePaths } from './missing-paths';
import { pacedLiquid } from './paced-liquid';
import { RenderClock } from './render-clock';
import { RENDER_MEMORY_LIMIT, RenderContext, renderFailureCauses } from './render-context';

export interface RenderResult {
  text: string;
  /** Dotted paths the template read that the data does not have. */
  missingPaths: string[];
}

/**
 * How many compiled templates a renderer keeps, and what they may weigh
 * together: a template weighs its characters, and CACHE_TAG_WEIGHT more for
 * each tag, about what its parsed form holds (700 bytes for `{{ a }}`,
 * 1.6 kB with two filters, measured). Sources run to 100,000 characters, and
 * saving a definition compiles its templates here too: counted alone, 2,000
 * large ones, each saved once, held 200 MB, and 2,000 of 500 tags up to
 * 1.5 GB. Within this weight, some 20 to 30 MB.
 */
const CACHE_LIMITS = { entries: 2_000, weight: 20_000_000 };
const CACHE_TAG_WEIGHT = 1_000;
/**
 * Liquid tags and outputs (`{{ }}`, `{% %}`) one template may hold when it is
 * saved. Parsing and analysing a template costs more than linearly in them
 * (about 20 ms for 500 on this machine, 0.2 s for 5,000, seconds for 20,000),
 * and saving a definition runs on the gateway's event loop.
 */
export const TEMPLATE_TAGS_LIMIT = 500;
/**
 * A rendered prompt or greeting longer than this is refused. Liquid's own
 * limits count filters' work, not output: a loop, or a `{% capture %}`
 * doubled a few dozen times, can write hundreds of megabytes from a template
 * of a kilobyte.
 */
export const RENDERED_CHARS_LIMIT = 1_000_000;
/** How long one template's render may take, when the caller sets no tighter bound: on its RenderClock, the turns it gives the event loop back left out. */
export const TEMPLATE_RENDER_LIMIT_MS = 1_000;

/** Tighter bounds for one render: what is left of a larger budget (`renderDefinition`'s). */
export interface RenderBounds {
  /** Milliseconds this render may take, on `clock`. */
  timeLimitMs?: number;
  /** Characters it may write. */
  charsLimit?: number;
  /** The larger budget's clock, which the render pauses on and is timed by; a clock of its own when not given. */
  clock?: RenderClock;
}

/** Liquid's tags that read another template by name. */
const TEMPLATE_READING_TAGS = ['include', 'render', 'layout'];

/** Thrown when a template (or a capture in it) renders past its characters' bound. */
export class RenderedTooLongError extends Error {
  constructor(readonly limit: number) {
    super(`the template renders to more than ${limit} characters`);
    this.name = 'RenderedTooLongError';
  }

  /** The one a render failed with, under the RenderError Liquid wraps a tag's failure in; null for any other failure. */
  static in(error: unknown): RenderedTooLongError | null {
    for (const cause of renderFailureCauses(error)) if (cause instanceof RenderedTooLongError) return cause;
    return null;
  }
}

/** A template parsed once, with the variable paths it reads (a static analysis that costs more than most renders). */
interface CompiledTemplate {
  templates: Template[];
  variables: VariablePaths;
}

/**
 * Renders prompt templates with Liquid: `{{ initial_context.user.name }}`,
 * `{{ initial_context.x | default: "fallback" }}`. Liquid never evaluates code
 * from a template; includes have no file system to read, and parse/render are
 * bounded so a hostile template cannot hang the dialer: a render gives the
 * event loop back every RENDER_SLICE_MS (pacedLiquid, RenderContext). Each
 * distinct template is compiled and analysed once.
 */
@Injectable()
export class PromptRenderer {
  private readonly liquid = pacedLiquid({
    strictFilters: true,
    strictVariables: false,
    ownPropertyOnly: true,
    templates: {},
    parseLimit: 100_000,
    // What a render outside a RenderContext would get: ours bring their own, on the render's clock.
    renderLimit: TEMPLATE_RENDER_LIMIT_MS,
    memoryLimit: RENDER_MEMORY_LIMIT,
  });
  private readonly compiled = new CompiledTemplateCache<CompiledTemplate>(
    CACHE_LIMITS,
    (source) => source.length + liquidTagCount(source) * CACHE_TAG_WEIGHT,
  );

  constructor() {
    // A capture is an output of its own, kept in a variable: it gets the same bound as the template's.
    this.liquid.registerTag('capture', BoundedCaptureTag);
    // A prompt has no other templates to read. Refused when the definition is saved, not when a call renders it; and
    // never looked up by name in the empty template store, where `constructor` would find Object's own.
    for (const name of TEMPLATE_READING_TAGS) {
      this.liquid.registerTag(name, {
        parse(token: TagToken) {
          throw new Error(`{% ${token.name} %} is not available: a prompt has no other templates to read`);
        },
        render: () => undefined,
      });
    }
    // `{% liquid %}` holds any number of tags, one a line, behind one delimiter: TEMPLATE_TAGS_LIMIT, which counts
    // delimiters before anything is parsed, would not bound what it costs to parse and analyse.
    this.liquid.registerTag('liquid', {
      parse() {
        throw new Error('{% liquid %} is not available: write each tag in a {% %} of its own');
      },
      render: () => undefined,
    });
  }

  /**
   * Throws with Liquid's message when `source` is not a valid template, or
   * holds more than TEMPLATE_TAGS_LIMIT tags. Not cached: what is refused
   * must not take a place a stored definition's template would use.
   */
  validate(source: string): void {
    const tags = liquidTagCount(source);
    if (tags > TEMPLATE_TAGS_LIMIT) throw new Error(`it holds ${tags} Liquid tags and outputs; the limit is ${TEMPLATE_TAGS_LIMIT}`);
    assertDeferredValuesParse(this.liquid.parse(source), this.liquid);
  }

  /**
   * Throws when the template fails, runs past its time, or renders more than
   * RENDERED_CHARS_LIMIT characters (or the tighter `bounds`).
   */
  async render(source: string, data: Record<string, unknown>, bounds: RenderBounds = {}): Promise<RenderResult> {
    const clock = bounds.clock ?? new RenderClock();
    const { templates, variables } = this.compile(source);
    const emitter = new BoundedEmitter(Math.min(RENDERED_CHARS_LIMIT, bounds.charsLimit ?? Infinity));
    const timeLimitMs = Math.min(TEMPLATE_RENDER_LIMIT_MS, Math.max(0, bounds.timeLimitMs ?? Infinity));
    const context = RenderContext.on(clock, timeLimitMs, data, this.liquid);
    await toPromise(this.liquid.renderer.renderTemplates(templates, context, emitter));
    return { text: emitter.buffer, missingPaths: missingPaths(variables, data) };
  }

  private compile(source: string): CompiledTemplate {
    const cached = this.compiled.get(source);
    if (cached) return cached;
    const templates = this.liquid.parse(source);
    const compiled = { templates, variables: this.liquid.globalVariableSegmentsSync(templates) };
    this.compiled.set(source, compiled);
    return compiled;
  }
}

/** Filters given a Liquid expression as a string (`where_exp: "item", "item.kind == 'x'"`), parsed only as they run. */
const EXPRESSION_FILTERS = new Set(['where_exp', 'reject_exp', 'group_by_exp', 'has_exp', 'find_exp', 'find_index_exp']);

/** A parsed template's part, as Liquid's static analysis walks it. */
interface TemplatePart {
  arguments?(): Iterable<unknown>;
  children?(partials: boolean, sync: boolean): unknown;
}

/**
 * Parses what Liquid itself leaves to the render, where no data can change
 * the outcome: the expression a literal gives an `*_exp` filter, and the
 * filtered values of `{% cycle %}`. An unknown filter or a syntax error
 * there passed the parse, and failed every call that reached it
 * (`template_error`). Walks every branch, taken with the call's data or
 * not, the way Liquid's static analysis does.
 */
function assertDeferredValuesParse(templates: Template[], liquid: Liquid): void {
  const checkValue = (value: Value): void => {
    for (const filter of value.filters) {
      if (!EXPRESSION_FILTERS.has(filter.name)) continue;
      const expression = filter.args[1];
      // A variable's expression is known only with the call's data.
      if (isQuoted(expression)) {
        try {
          checkValue(new Value(expression.content, liquid));
        } catch (error) {
          throw new Error(`the expression given to ${filter.name} ("${expression.content}") does not parse: ${(error as Error).message}`, { cause: error });
        }
      }
    }
  };
  function* visit(part: TemplatePart): Generator<unknown, void, Iterable<TemplatePart>> {
    for (const argument of part.arguments?.() ?? []) {
      if (argument instanceof Value) checkValue(argument);
      // A filtered value Liquid keeps as a token, to make a Value of as the tag renders ({% cycle %}'s).
      else if (isFilteredValueToken(argument)) checkValue(new Value(argument, liquid));
    }
    if (part.children) for (const child of yield part.children(false, true)) yield visit(child);
  }
  toValueSync(
    (function* () {
      for (const template of templates) yield visit(template as unknown as TemplatePart);
    })(),
  );
}

function isQuoted(token: unknown): token is QuotedToken {
  return typeof token === 'object' && token !== null && (token as QuotedToken).kind === TokenKind.Quoted;
}

function isFilteredValueToken(token: unknown): token is FilteredValueToken {
  return typeof token === 'object' && token !== null && (token as FilteredValueToken).kind === TokenKind.FilteredValue;
}

/** The Liquid tags and outputs a template holds, counted from its delimiters without parsing it. */
export function liquidTagCount(source: string): number {
  return source.match(/\{[{%]/g)?.length ?? 0;
}

/** Liquid's string output, refused past `limit` characters. */
class BoundedEmitter implements Emitter {
  buffer = '';

  constructor(private readonly limit = RENDERED_CHARS_LIMIT) {}

  write(html: unknown): void {
    const value = toValue(html);
    this.buffer += value === null || value === undefined ? '' : Array.isArray(value) ? value.join('') : String(value);
    if (this.buffer.length > this.limit) throw new RenderedTooLongError(this.limit);
  }
}

/** `{% capture name %}…{% endcapture %}` as Liquid has it, its output bounded as a template's is. */
class BoundedCaptureTag extends CaptureTag {
  override *render(context: Context): Generator<unknown, void, string> {
    const emitter = new BoundedEmitter();
    yield this.liquid.renderer.renderTemplates(this.templates, context, emitter);
    context.bottom()[this.variable] = emitter.buffer;
  }
}
