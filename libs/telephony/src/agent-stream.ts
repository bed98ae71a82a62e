import { AgentSessionTokens } from './agent-session-tokens';

export interface AgentStream {
  /** The runtime's media WebSocket with `session_token` in its query. */
  url: string;
  sessionToken: string;
}

/**
 * Where an answered call's audio goes: the configuration's `agent_runtime_url`
 * setting, else AGENT_RUNTIME_URL, with a fresh session token for the run.
 */
export function agentStreamFor(
  tokens: AgentSessionTokens,
  runId: number,
  runtime: { defaultUrl: string; settings: Record<string, unknown>; ttlSeconds: number },
): AgentStream {
  const sessionToken = tokens.sign({ runId, expiresAt: Math.floor(Date.now() / 1000) + runtime.ttlSeconds });
  const base = typeof runtime.settings.agent_runtime_url === 'string' ? runtime.settings.agent_runtime_url : runtime.defaultUrl;
  const url = new URL(base);
  url.searchParams.set('session_token', sessionToken);
  return { url: url.toString(), sessionToken };
}
