import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DEFINITION_NODE_TYPES, DefinitionEdge, DefinitionGraph, DefinitionNode, DefinitionNodeType } from '@app/persistence';
import { DEFINITION_SAVE_RENDER_LIMITS, DefinitionRenderLimitError, liquidTagCount, PromptRenderer, renderDefinition } from '@app/templating';
import { jsonValueProblem } from '@app/common';
import { DEFINITION_LIMITS } from './definition-limits';
import { invalidDefinition } from './invalid-definition.error';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const GRAPH_KEYS = ['nodes', 'edges'];
const NODE_KEYS = ['id', 'type', 'data'];
const EDGE_KEYS = ['source', 'target'];
const TEMPLATE_FIELDS = ['prompt', 'greeting'] as const;

type JsonObject = Record<string, unknown>;

/**
 * Checks a definition strictly and returns the graph to store: trigger nodes
 * without a `trigger_path` get a fresh UUID, and every path is lower-cased
 * (the form Postgres answers UUIDs in, which run lookups compare against).
 * Any problem is a 400 `invalid_definition` naming it.
 */
@Injectable()
export class DefinitionValidator {
  constructor(private readonly renderer: PromptRenderer) {}

  normalize(input: unknown): DefinitionGraph {
    if (!isObject(input)) throw invalidDefinition('it must be a JSON object with "nodes" and "edges"');
    // Stored as jsonb, node data as sent: text Postgres refuses, or a number that is not the one written.
    const unstorable = jsonValueProblem(input, 'definition');
    if (unstorable) throw invalidDefinition(unstorable);
    const bytes = Buffer.byteLength(JSON.stringify(input), 'utf8');
    if (bytes > DEFINITION_LIMITS.maxJsonBytes) {
      throw invalidDefinition(`it is ${bytes} bytes of JSON; the limit is ${DEFINITION_LIMITS.maxJsonBytes}`);
    }
    assertOnlyKeys(input, GRAPH_KEYS, 'the definition');
    const nodes = this.nodes(input.nodes);
    const edges = this.edges(input.edges, new Set(nodes.map((node) => node.id)));
    return { nodes, edges };
  }

  /**
   * Renders the definition once, with no call data, and refuses it when its
   * templates together pass DEFINITION_SAVE_RENDER_LIMITS (a loop of a
   * million turns, output by the megabyte): a quarter of the time a call
   * has, so that what is saved does not fail calls on a busier process, nor
   * hold every process that renders it for long. What else fails without
   * data (a filter given nothing) may work with a call's, and is left to the
   * call.
   */
  async assertRenders(graph: DefinitionGraph): Promise<void> {
    try {
      // A template that fails without data is passed over, and the ones after it still counted against the budget.
      await renderDefinition(this.renderer, graph, { initial_context: {} }, DEFINITION_SAVE_RENDER_LIMITS, () => undefined);
    } catch (error) {
      if (error instanceof DefinitionRenderLimitError) throw invalidDefinition(error.message);
    }
  }

  private nodes(value: unknown): DefinitionNode[] {
    if (!Array.isArray(value)) throw invalidDefinition('"nodes" must be an array');
    if (value.length === 0) throw invalidDefinition('"nodes" must not be empty');
    if (value.length > DEFINITION_LIMITS.maxNodes) {
      throw invalidDefinition(`it has ${value.length} nodes; the limit is ${DEFINITION_LIMITS.maxNodes}`);
    }
    // Before any template is parsed: parsing costs more than linearly in the tags, on the gateway's event loop.
    const tags = value.reduce<number>((sum, node) => sum + templateTagsOf(node), 0);
    if (tags > DEFINITION_LIMITS.maxTemplateTags) {
      throw invalidDefinition(`its templates hold ${tags} Liquid tags and outputs together; the limit is ${DEFINITION_LIMITS.maxTemplateTags}`);
    }
    const nodes = value.map((node, index) => this.node(node, `nodes[${index}]`));
    const seenIds = new Set<string>();
    const seenPaths = new Set<string>();
    for (const node of nodes) {
      if (seenIds.has(node.id)) throw invalidDefinition(`node id "${node.id}" is used more than once`);
      seenIds.add(node.id);
      const path = node.data.trigger_path;
      if (path !== undefined) {
        if (seenPaths.has(path)) throw invalidDefinition(`trigger_path ${path} is used by more than one trigger node`);
        seenPaths.add(path);
      }
    }
    const starts = nodes.filter((node) => node.type === 'startCall').length;
    if (starts !== 1) throw invalidDefinition(`it must have exactly one startCall node, not ${starts}`);
    return nodes;
  }

  private node(value: unknown, where: string): DefinitionNode {
    if (!isObject(value)) throw invalidDefinition(`${where} must be an object with "id", "type" and "data"`);
    assertOnlyKeys(value, NODE_KEYS, where);
    const { id, type, data } = value;
    if (typeof id !== 'string' || id.trim() === '') throw invalidDefinition(`${where}.id must be a non-empty string`);
    if (id.length > DEFINITION_LIMITS.maxNodeIdLength) {
      throw invalidDefinition(`${where}.id is longer than ${DEFINITION_LIMITS.maxNodeIdLength} characters`);
    }
    const label = `${where} (id "${id}")`;
    if (typeof type !== 'string' || !DEFINITION_NODE_TYPES.includes(type as DefinitionNodeType)) {
      throw invalidDefinition(`${label} has type ${JSON.stringify(type)}; known types are ${DEFINITION_NODE_TYPES.join(', ')}`);
    }
    if (!isObject(data)) throw invalidDefinition(`${label}.data must be an object`);
    const node: DefinitionNode = { id, type: type as DefinitionNodeType, data: { ...data } };

    if ((node.type === 'startCall' || node.type === 'agentNode') && typeof data.prompt !== 'string') {
      throw invalidDefinition(`${label} is a ${node.type} and needs a string data.prompt`);
    }
    for (const field of TEMPLATE_FIELDS) {
      if (data[field] === undefined) continue;
      if (typeof data[field] !== 'string') throw invalidDefinition(`${label}.data.${field} must be a string`);
      this.assertTemplate(data[field], `${label}.data.${field}`);
    }
    if (node.type === 'trigger') node.data.trigger_path = triggerPath(data.trigger_path, label);
    else if (data.trigger_path !== undefined) {
      throw invalidDefinition(`${label}.data.trigger_path is only allowed on trigger nodes`);
    }
    return node;
  }

  private edges(value: unknown, nodeIds: Set<string>): DefinitionEdge[] {
    if (!Array.isArray(value)) throw invalidDefinition('"edges" must be an array');
    if (value.length > DEFINITION_LIMITS.maxEdges) {
      throw invalidDefinition(`it has ${value.length} edges; the limit is ${DEFINITION_LIMITS.maxEdges}`);
    }
    return value.map((edge: unknown, index) => {
      const where = `edges[${index}]`;
      if (!isObject(edge)) throw invalidDefinition(`${where} must be an object with "source" and "target"`);
      assertOnlyKeys(edge, EDGE_KEYS, where);
      for (const end of EDGE_KEYS) {
        const id = edge[end];
        if (typeof id !== 'string') throw invalidDefinition(`${where}.${end} must be a node id`);
        if (!nodeIds.has(id)) throw invalidDefinition(`${where}.${end} refers to node "${id}", which does not exist`);
      }
      return { source: edge.source as string, target: edge.target as string };
    });
  }

  private assertTemplate(source: string, where: string): void {
    try {
      this.renderer.validate(source);
    } catch (error) {
      const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
      throw invalidDefinition(`${where} is not a valid template: ${reason}`);
    }
  }
}

/** The Liquid tags in a node's template fields, whatever else is wrong with it (checked after). */
function templateTagsOf(node: unknown): number {
  const data = isObject(node) && isObject(node.data) ? node.data : {};
  return TEMPLATE_FIELDS.reduce((sum, field) => sum + (typeof data[field] === 'string' ? liquidTagCount(data[field]) : 0), 0);
}

function triggerPath(value: unknown, label: string): string {
  if (value === undefined || value === null || value === '') return randomUUID();
  if (typeof value !== 'string' || !UUID.test(value)) {
    throw invalidDefinition(`${label}.data.trigger_path must be a UUID (or absent, for the server to assign one)`);
  }
  return value.toLowerCase();
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function assertOnlyKeys(value: JsonObject, allowed: string[], where: string): void {
  const unknown = Object.keys(value).filter((key) => !allowed.includes(key));
  if (unknown.length) {
    throw invalidDefinition(`${where} has unknown field(s) ${unknown.join(', ')}; allowed: ${allowed.join(', ')}`);
  }
}
