/** Bounds on a definition, so one save cannot store or render an unbounded graph. */
export const DEFINITION_LIMITS = {
  maxNodes: 200,
  maxEdges: 1000,
  maxJsonBytes: 256 * 1024,
  maxNodeIdLength: 100,
  /** Liquid tags and outputs in all its templates together (each template holds at most TEMPLATE_TAGS_LIMIT). */
  maxTemplateTags: 2000,
} as const;
