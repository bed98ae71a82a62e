/** The JSON shape of a workflow definition. */
export type DefinitionNodeType = 'startCall' | 'agentNode' | 'endCall' | 'trigger';
export const DEFINITION_NODE_TYPES: readonly DefinitionNodeType[] = ['startCall', 'agentNode', 'endCall', 'trigger'];

export interface DefinitionNode {
  id: string;
  type: DefinitionNodeType;
  data: {
    prompt?: string;
    greeting?: string;
    trigger_path?: string;
    [key: string]: unknown;
  };
}

export interface DefinitionEdge {
  source: string;
  target: string;
}

export interface DefinitionGraph {
  nodes: DefinitionNode[];
  edges: DefinitionEdge[];
}

export function triggerPathsOf(graph: DefinitionGraph): string[] {
  return graph.nodes
    .filter((node) => node.type === 'trigger' && typeof node.data?.trigger_path === 'string')
    .map((node) => node.data.trigger_path as string);
}
