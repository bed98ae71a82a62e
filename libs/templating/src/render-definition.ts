import { DefinitionGraph } from '@app/persistence';
import { PromptRenderer, RENDERED_CHARS_LIMIT, RenderedTooLongError } from './prompt-renderer';

export interface RenderedNode {
  id: string;
  type: string;
  prompt: string | null;
  greeting: string | null;
}

export interface RenderedAgent {
  nodes: RenderedNode[];
  /** What the agent says first: the start node's greeting, else its prompt. */
  opening: string;
  missingPaths: string[];
}

/**
 * What rendering one whole definition may take. Each template has its own
 * bound (TEMPLATE_RENDER_LIMIT_MS, RENDERED_CHARS_LIMIT), but a definition
 * holds up to 200 nodes of two templates each: at a second apiece, one
 * definition could hold a process for minutes, and every call of it would.
 */
export const DEFINITION_RENDER_LIMITS = { timeMs: 1_000, chars: 2_000_000 };

/** The process gets its event loop back after this much rendering without a pause. */
const RENDER_SLICE_MS = 20;

/** Thrown when a definition's templates together pass DEFINITION_RENDER_LIMITS. */
export class DefinitionRenderLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DefinitionRenderLimitError';
  }
}

/**
 * Renders every node's prompt and greeting with the run's data, within
 * DEFINITION_RENDER_LIMITS for them all. Liquid renders without giving the
 * event loop back, so past RENDER_SLICE_MS of it the next template waits a
 * turn: other requests and jobs go on between a slow definition's templates.
 */
export async function renderDefinition(
  renderer: PromptRenderer,
  graph: DefinitionGraph,
  data: Record<string, unknown>,
  limits = DEFINITION_RENDER_LIMITS,
  /**
   * Given, a template's own failure (what is not the budget's) is handed to
   * it and the field left null, and the rest still rendered: a check of the
   * budget with no call data, which a filter given nothing must not cut short.
   */
  onFieldError?: (error: unknown) => void,
): Promise<RenderedAgent> {
  const missing = new Set<string>();
  // Time spent rendering, not waiting for the event loop between templates: a busy process must not fail a definition.
  let spentMs = 0;
  let chars = 0;
  let sliceStart = performance.now();
  const tooSlow = () => overBudget(`rendering its templates takes more than ${limits.timeMs} ms`);
  const renderField = async (source: unknown): Promise<string | null> => {
    if (typeof source !== 'string') return null;
    if (performance.now() - sliceStart > RENDER_SLICE_MS) {
      await new Promise((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
    const timeLimitMs = limits.timeMs - spentMs;
    if (timeLimitMs <= 0) throw tooSlow();
    const started = performance.now();
    let result;
    try {
      result = await renderer.render(source, data, { timeLimitMs, charsLimit: limits.chars - chars });
    } catch (error) {
      spentMs += performance.now() - started;
      if (spentMs >= limits.timeMs) throw tooSlow();
      // Past the bound of one template, or of what the definition had left: output no call can be placed with.
      const tooLong = RenderedTooLongError.in(error);
      if (tooLong) {
        throw overBudget(
          tooLong.limit < RENDERED_CHARS_LIMIT
            ? `its templates render to more than ${limits.chars} characters together`
            : `a template renders to more than ${RENDERED_CHARS_LIMIT} characters`,
        );
      }
      if (!onFieldError) throw error;
      onFieldError(error);
      return null;
    }
    spentMs += performance.now() - started;
    // A render that ran past the budget but finished (Liquid looks at its time limit between its own steps).
    if (spentMs >= limits.timeMs) throw tooSlow();
    chars += result.text.length;
    result.missingPaths.forEach((path) => missing.add(path));
    return result.text;
  };
  const nodes: RenderedNode[] = [];
  for (const node of graph.nodes) {
    nodes.push({
      id: node.id,
      type: node.type,
      prompt: await renderField(node.data?.prompt),
      greeting: await renderField(node.data?.greeting),
    });
  }
  const start = nodes.find((node) => node.type === 'startCall');
  return { nodes, opening: start?.greeting || start?.prompt || '', missingPaths: [...missing] };
}

/** `renderDefinition(...).opening` alone: renders the start node's greeting, and its prompt only when that is empty. */
export async function renderOpening(renderer: PromptRenderer, graph: DefinitionGraph, data: Record<string, unknown>): Promise<string> {
  const start = graph.nodes.find((node) => node.type === 'startCall');
  for (const source of [start?.data?.greeting, start?.data?.prompt]) {
    if (typeof source !== 'string') continue;
    const text = (await renderer.render(source, data)).text;
    if (text) return text;
  }
  return '';
}

function overBudget(what: string): DefinitionRenderLimitError {
  return new DefinitionRenderLimitError(`the agent's definition is too costly to render: ${what}`);
}
