import { DefinitionGraph } from '@app/persistence';
import { PromptRenderer, RENDERED_CHARS_LIMIT, RenderedTooLongError } from './prompt-renderer';
import { RenderClock } from './render-clock';
import { memoryLimitFailure } from './render-context';

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

/**
 * The budget a definition is held to when it is saved, rendered once with no
 * call data: a quarter of a call's time. A call renders it with data, which
 * loops may run over, on a dialer whose cores other processes share: one
 * that took most of a call's second when saved would fail calls at random.
 */
export const DEFINITION_SAVE_RENDER_LIMITS = { timeMs: DEFINITION_RENDER_LIMITS.timeMs / 4, chars: DEFINITION_RENDER_LIMITS.chars };

/** Thrown when a definition's templates together pass DEFINITION_RENDER_LIMITS. */
export class DefinitionRenderLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DefinitionRenderLimitError';
  }
}

/**
 * Renders every node's prompt and greeting with the run's data, within
 * DEFINITION_RENDER_LIMITS for them all, on one RenderClock: the templates
 * give the event loop back every RENDER_SLICE_MS, between them and inside
 * one, so other requests and jobs go on beside a slow definition, and the
 * time they take meanwhile is not counted against it.
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
  // Time spent rendering, not waiting for the event loop: a busy process must not fail a definition.
  const clock = new RenderClock();
  let chars = 0;
  const tooSlow = () => overBudget(`rendering its templates takes more than ${limits.timeMs} ms`);
  const renderField = async (source: unknown): Promise<string | null> => {
    if (typeof source !== 'string') return null;
    await clock.pauseIfDue();
    const timeLimitMs = limits.timeMs - clock.elapsedMs();
    if (timeLimitMs <= 0) throw tooSlow();
    let result;
    try {
      result = await renderer.render(source, data, { timeLimitMs, charsLimit: limits.chars - chars, clock });
    } catch (error) {
      if (clock.elapsedMs() >= limits.timeMs) throw tooSlow();
      // Past the bound of one template, or of what the definition had left: output no call can be placed with.
      const tooLong = RenderedTooLongError.in(error);
      if (tooLong) {
        throw overBudget(
          tooLong.limit < RENDERED_CHARS_LIMIT
            ? `its templates render to more than ${limits.chars} characters together`
            : `a template renders to more than ${RENDERED_CHARS_LIMIT} characters`,
        );
      }
      // Past a bound on what one render may handle: a cost, as the budgets above are. Rendered with no call data (when
      // the definition is saved), it comes from ranges and loops written into the template, and every call would fail
      // on it alike; a call's own data can also take a template past it (a list of more than LIST_ITEMS_LIMIT items).
      const overMemory = memoryLimitFailure(error);
      if (overMemory) throw overBudget(`a template goes past what one render may handle (${overMemory})`);
      if (!onFieldError) throw error;
      onFieldError(error);
      return null;
    }
    // A render that ran past the budget but finished (its time limit is looked at between its steps).
    if (clock.elapsedMs() >= limits.timeMs) throw tooSlow();
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
  const startIndex = graph.nodes.findIndex((node) => node.type === 'startCall');
  const opening = startIndex < 0 ? '' : (nodes[startIndex][openingField(graph.nodes[startIndex])] ?? '');
  return { nodes, opening, missingPaths: [...missing] };
}

/**
 * Which field of the start node the agent opens with: its greeting when it
 * has one, even one that renders empty for this call (`{% if vip %}Welcome
 * back!{% endif %}`: its author chose to say nothing then), and its prompt
 * only when it has none. A greeting that rendered empty must not put the
 * prompt in its place: a prompt holds the agent's instructions, and maybe
 * the call's context, which the callee would hear and the transcript keep.
 */
function openingField(start: DefinitionGraph['nodes'][number]): 'greeting' | 'prompt' {
  const greeting = start.data?.greeting;
  return typeof greeting === 'string' && greeting.trim() !== '' ? 'greeting' : 'prompt';
}

/** `renderDefinition(...).opening` alone: renders only the start node's field the agent opens with. */
export async function renderOpening(renderer: PromptRenderer, graph: DefinitionGraph, data: Record<string, unknown>): Promise<string> {
  const start = graph.nodes.find((node) => node.type === 'startCall');
  const source = start ? start.data?.[openingField(start)] : undefined;
  return typeof source === 'string' ? (await renderer.render(source, data)).text : '';
}

function overBudget(what: string): DefinitionRenderLimitError {
  return new DefinitionRenderLimitError(`the agent's definition is too costly to render: ${what}`);
}
