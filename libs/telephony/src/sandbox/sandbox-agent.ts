import { renderWav } from './wav';
import { sandboxConversation } from './sandbox-conversation';

export interface SandboxAgentSession {
  run_id: number;
  agent: { opening: string };
}

/**
 * The sandbox's built-in voice agent. It plays the part of an external
 * agent runtime and uses only the public agent-session contract: it reads
 * the rendered agent, reports the conversation turn by turn, uploads the
 * call's recording, and closes the session.
 */
export class SandboxAgent {
  constructor(private readonly apiBaseUrl: string) {}

  async converse(sessionToken: string, talkMs: number): Promise<void> {
    const call = (method: string, operation: string, body?: unknown, contentType?: string) =>
      this.call(sessionToken, method, operation, body, contentType);
    const session = (await call('GET', '')) as SandboxAgentSession;
    const turns = sandboxConversation(session.agent.opening, talkMs);
    await call('POST', '/events', {
      events: [
        ...turns.map((turn) => ({ type: 'transcript', ...turn })),
        { type: 'gathered_context', data: { conversation: 'sandbox' } },
        { type: 'usage', usage: { agent_turns: turns.filter((turn) => turn.speaker === 'agent').length } },
      ],
    });
    const recording = renderWav(
      talkMs,
      turns.map((turn) => ({ startMs: turn.start_ms, endMs: turn.end_ms, frequencyHz: turn.speaker === 'agent' ? 440 : 330 })),
    );
    await call('PUT', '/recording', recording, 'audio/wav');
    await call('POST', '/events', { events: [{ type: 'session_ended' }] });
  }

  /**
   * One request on the session. A failure names the operation, never the
   * URL: the session's token is in its path, and the message reaches the
   * dialer's log and the run's own log, which every key of the organization
   * can read.
   */
  private async call(sessionToken: string, method: string, operation: string, body?: unknown, contentType = 'application/json'): Promise<unknown> {
    const url = `${this.apiBaseUrl}/api/v1/agent-sessions/${encodeURIComponent(sessionToken)}${operation}`;
    const response = await fetch(url, {
      method,
      headers: body === undefined ? {} : { 'content-type': contentType },
      body: body === undefined ? undefined : Buffer.isBuffer(body) ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`agent session ${method} ${operation || '/'} answered ${response.status}: ${text.slice(0, 200)}`);
    return text ? JSON.parse(text) : null;
  }
}
