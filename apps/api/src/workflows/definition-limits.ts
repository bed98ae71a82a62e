/** Bounds on a definition, so one save cannot store or render an unbounded graph. */
export const DEFINITION_LIMITS = {
  maxNodes: 200,
  maxEdges: 1000,
  maxJsonBytes: 256 * 1024,
  maxNodeIdLength: 100,
} as const;
