import { DefinitionGraph } from '@app/persistence';
import { PromptRenderer } from './prompt-renderer';

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

/** Renders every node's prompt and greeting with the run's data. */
export async function renderDefinition(
  renderer: PromptRenderer,
  graph: DefinitionGraph,
  data: Record<string, unknown>,
): Promise<RenderedAgent> {
  const missing = new Set<string>();
  const renderField = async (source: unknown): Promise<string | null> => {
    if (typeof source !== 'string') return null;
    const result = await renderer.render(source, data);
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
