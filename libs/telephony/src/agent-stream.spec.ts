import { AgentSessionTokens } from './agent-session-tokens';
import { agentStreamFor, AgentSessionLifetime } from './agent-stream';

describe('agentStreamFor', () => {
  const tokens = new AgentSessionTokens(Buffer.alloc(32, 7));
  const FOUR_HOURS = 4 * 3600;
  const AFTER_CALL = 15 * 60;
  const UPLOAD_TIMEOUT_MS = 300_000;

  /** The seconds from now a token minted for `lifetime` lives, read back from the token itself. */
  const lifeOf = (lifetime: AgentSessionLifetime) => {
    const now = Math.floor(Date.now() / 1000);
    const { sessionToken } = agentStreamFor(tokens, 42, { defaultUrl: 'ws://runtime.test/media', settings: {}, lifetime });
    const check = tokens.verify(sessionToken, now);
    if (!check.ok) throw new Error(`the token minted is ${check.reason}`);
    return check.grant.expiresAt - now;
  };

  it('gives a token minted at the answer the whole call its run allows, then time for the last report and the recording upload', () => {
    // A call allowed 4 hours, with AGENT_SESSION_TTL_SECONDS at its default of 4 hours: the hang-up's report still counts.
    const life = lifeOf({ minimumSeconds: FOUR_HOURS, maxCallDurationSeconds: 14_400, uploadTimeoutMs: UPLOAD_TIMEOUT_MS });
    expect(life).toBeGreaterThanOrEqual(14_400 + AFTER_CALL + UPLOAD_TIMEOUT_MS / 1000);
    expect(life).toBeLessThanOrEqual(14_400 + AFTER_CALL + UPLOAD_TIMEOUT_MS / 1000 + 1);
  });

  it('counts a run without a limit of its own or its configuration as allowed an hour, as the reaper does', () => {
    const life = lifeOf({ minimumSeconds: 60, maxCallDurationSeconds: null, uploadTimeoutMs: UPLOAD_TIMEOUT_MS });
    expect(life).toBeGreaterThanOrEqual(3600 + AFTER_CALL + UPLOAD_TIMEOUT_MS / 1000);
  });

  it('adds the time before the answer to a token minted at the dial', () => {
    const atAnswer = lifeOf({ minimumSeconds: 60, maxCallDurationSeconds: 14_400, uploadTimeoutMs: UPLOAD_TIMEOUT_MS });
    const atDial = lifeOf({ minimumSeconds: 60, maxCallDurationSeconds: 14_400, beforeAnswerSeconds: 300, uploadTimeoutMs: UPLOAD_TIMEOUT_MS });
    expect(atDial - atAnswer).toBeGreaterThanOrEqual(299);
    expect(atDial - atAnswer).toBeLessThanOrEqual(301);
  });

  it('keeps AGENT_SESSION_TTL_SECONDS as the least a token lives', () => {
    const week = 7 * 24 * 3600;
    const life = lifeOf({ minimumSeconds: week, maxCallDurationSeconds: 60, uploadTimeoutMs: UPLOAD_TIMEOUT_MS });
    expect(life).toBeGreaterThanOrEqual(week);
    expect(life).toBeLessThanOrEqual(week + 1);
  });

  it("streams to the configuration's agent_runtime_url when it names one, with the token in the query", () => {
    const lifetime = { minimumSeconds: 60, maxCallDurationSeconds: 60, uploadTimeoutMs: 1000 };
    const settings = { agent_runtime_url: 'wss://own.test/ws?x=1' };
    const stream = agentStreamFor(tokens, 42, { defaultUrl: 'ws://runtime.test/media', settings, lifetime });
    const url = new URL(stream.url);
    expect(`${url.origin}${url.pathname}`).toBe('wss://own.test/ws');
    expect(url.searchParams.get('x')).toBe('1');
    expect(url.searchParams.get('session_token')).toBe(stream.sessionToken);
  });
});
