import { Injectable } from '@nestjs/common';
import { Liquid, Template } from 'liquidjs';
import { RecentMap } from '@app/common';

export interface RenderResult {
  text: string;
  /** Dotted paths the template read that the data does not have. */
  missingPaths: string[];
}

const CACHE_LIMIT = 2000;

/** The variable paths a template reads, as Liquid's static analysis answers them. */
type VariablePaths = ReturnType<Liquid['globalVariableSegmentsSync']>;

/** A template parsed once, with the variable paths it reads (a static analysis that costs more than most renders). */
interface CompiledTemplate {
  templates: Template[];
  variables: VariablePaths;
}

/**
 * Renders prompt templates with Liquid: `{{ initial_context.user.name }}`,
 * `{{ initial_context.x | default: "fallback" }}`. Liquid never evaluates code
 * from a template; includes have no file system to read, and parse/render are
 * bounded so a hostile template cannot hang the dialer. Each distinct
 * template is compiled and analysed once.
 */
@Injectable()
export class PromptRenderer {
  private readonly liquid = new Liquid({
    strictFilters: true,
    strictVariables: false,
    ownPropertyOnly: true,
    templates: {},
    parseLimit: 100_000,
    renderLimit: 1_000,
    memoryLimit: 10_000_000,
  });
  private readonly compiled = new RecentMap<string, CompiledTemplate>(CACHE_LIMIT);

  /** Throws with Liquid's message when `source` is not a valid template. */
  validate(source: string): void {
    this.compile(source);
  }

  async render(source: string, data: Record<string, unknown>): Promise<RenderResult> {
    const { templates, variables } = this.compile(source);
    const text = String(await this.liquid.render(templates, data));
    return { text, missingPaths: missingPaths(variables, data) };
  }

  private compile(source: string): CompiledTemplate {
    const cached = this.compiled.get(source);
    if (cached) {
      this.compiled.set(source, cached); // used again: the most recent now
      return cached;
    }
    const templates = this.liquid.parse(source);
    const compiled = { templates, variables: this.liquid.globalVariableSegmentsSync(templates) };
    this.compiled.set(source, compiled);
    return compiled;
  }
}

function missingPaths(variables: VariablePaths, data: Record<string, unknown>): string[] {
  const missing = new Set<string>();
  for (const segments of variables) {
    // A computed segment (`a[b]`) ends what can be checked statically.
    const computed = segments.findIndex((s) => typeof s !== 'string' && typeof s !== 'number');
    const checkable = (computed === -1 ? segments : segments.slice(0, computed)) as Array<string | number>;
    let value: unknown = data;
    for (const segment of checkable) {
      if (value === null || typeof value !== 'object' || !Object.hasOwn(value, segment)) {
        missing.add(checkable.join('.'));
        break;
      }
      value = (value as Record<string | number, unknown>)[segment];
    }
  }
  return [...missing];
}
