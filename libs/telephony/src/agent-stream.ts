import { AgentSessionTokens } from './agent-session-tokens';

export interface AgentStream {
  /** The runtime's media WebSocket with `session_token` in its query. */
  url: string;
  sessionToken: string;
}

/** The longest a call whose run and configuration name no limit may talk: the configurations' default, as the reaper takes it. */
export const DEFAULT_MAX_CALL_DURATION_SECONDS = 3600;
/**
 * What a session token outlives its call by, besides the upload's own
 * request timeout: the minute the reaper lets a call talk past its limit,
 * the wait for the runtime's last report after the hang-up, and the start of
 * its recording upload.
 */
export const AGENT_SESSION_AFTER_CALL_SECONDS = 15 * 60;

/** What a session token must outlast: the whole call its run is allowed, and what the runtime sends after it. */
export interface AgentSessionLifetime {
  /** AGENT_SESSION_TTL_SECONDS: the least a token lives, however short the call. */
  minimumSeconds: number;
  /** The run's limit (as its dial told the carrier), else its configuration's; null for neither. */
  maxCallDurationSeconds: number | null;
  /** The time the call may still take to be answered: a token minted at the dial waits out dialing and ringing too. */
  beforeAnswerSeconds?: number;
  /** HTTP_REQUEST_TIMEOUT_MS: how long the recording upload after the hang-up may take to arrive. */
  uploadTimeoutMs: number;
}

/**
 * Where an answered call's audio goes: the configuration's `agent_runtime_url`
 * setting, else AGENT_RUNTIME_URL, with a fresh session token for the run.
 */
export function agentStreamFor(
  tokens: AgentSessionTokens,
  runId: number,
  runtime: { defaultUrl: string; settings: Record<string, unknown>; lifetime: AgentSessionLifetime },
): AgentStream {
  const sessionToken = tokens.sign({ runId, expiresAt: Math.floor(Date.now() / 1000) + agentSessionTtlSeconds(runtime.lifetime) });
  const base = typeof runtime.settings.agent_runtime_url === 'string' ? runtime.settings.agent_runtime_url : runtime.defaultUrl;
  const url = new URL(base);
  url.searchParams.set('session_token', sessionToken);
  return { url: url.toString(), sessionToken };
}

/**
 * How long a session token lives. The runtime's last report and its
 * recording come after the hang-up, which a call allowed 4 hours reaches
 * only then: a token that expired before would lose them (410
 * `session_expired`). A token stops working once its run has ended all the
 * same, so the longer life opens no later replay.
 */
export function agentSessionTtlSeconds(lifetime: AgentSessionLifetime): number {
  const call = (lifetime.beforeAnswerSeconds ?? 0) + (lifetime.maxCallDurationSeconds ?? DEFAULT_MAX_CALL_DURATION_SECONDS);
  const afterCall = AGENT_SESSION_AFTER_CALL_SECONDS + Math.ceil(lifetime.uploadTimeoutMs / 1000);
  return Math.max(lifetime.minimumSeconds, call + afterCall);
}
